"""The parts of nodegate.run.FleetRun, one concern each (issue 40 item 2): ``registry`` (which
nodes, lazy load and release), ``identity`` (machine identity index and clashes), ``background``
(gathering while the tests run, waiting for a node). Imports go one way: background and registry
-> identity; nodegate.run composes them; none imports run.
"""

"""Developer tools for nodegate (not shipped with the suite): the simulated fleet, sample builders."""

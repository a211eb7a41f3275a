"""nodegate.engine.remedy under its former name: the remediation of an ERROR is decided with its result."""

from ..engine.remedy import *  # noqa: F401,F403
from ..engine.remedy import DEFAULT, error_remediation  # noqa: F401

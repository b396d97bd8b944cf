"""The engine: the Session routes signals to rules and orders their findings; the RunState holds what the run
is (configuration, exceptions, tails, metric counts, checkpoints) and is what every rule's ``finish`` reads."""
from .session import Session, order
from .state import RunState

__all__ = ["RunState", "Session", "order"]

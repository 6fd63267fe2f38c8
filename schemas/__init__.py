"""The one data model every trajforge stage exchanges.

``schemas`` imports nothing from the other trajforge packages: explorers, filters, pipelines and training all
stand on it. Entities are pydantic models (validated, with errors that name the record and field); every
on-disk form has an explicit pyarrow schema in ``schemas.arrow``.
"""

from schemas.action import Action, ActionType
from schemas.bbox import BBox
from schemas.blobstore import BlobStore
from schemas.element import Element
from schemas.errors import FieldError, RecordValidationError
from schemas.observation import DeviceProfile, Observation, Platform
from schemas.reject import Reject
from schemas.sample import Sample, samples_from_trajectory
from schemas.trajectory import Goal, GoalKind, Lineage, Step, Task, Trajectory, Verification
from schemas.transition import Transition
from schemas.version import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Action",
    "ActionType",
    "BBox",
    "BlobStore",
    "DeviceProfile",
    "Element",
    "FieldError",
    "Goal",
    "GoalKind",
    "Lineage",
    "Observation",
    "Platform",
    "RecordValidationError",
    "Reject",
    "Sample",
    "Step",
    "Task",
    "Trajectory",
    "Transition",
    "Verification",
    "samples_from_trajectory",
]

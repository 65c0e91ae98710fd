# The names of the package, each written once. At run time ``lazy_loader.attach_stub`` reads this
# file (crowdlearn/__init__.py) and imports a name where it is first used; type checkers and
# IDEs read it as the package's interface (``X as X``: an explicit re-export, PEP 484).
# ``__all__`` is every name below except the modules of the last block.

# subpackages and modules of the API
from . import active as active
from . import aggregation as aggregation
from . import datasets as datasets
from . import distributed as distributed
from . import experiments as experiments
from . import features as features
from . import metrics as metrics
from . import selection as selection
from . import simulate as simulate
from . import symbolic as symbolic
from . import widgets as widgets

# the labels, the EM engine, errors and size limits
from ._limits import SizeLimits as SizeLimits
from ._limits import get_size_limits as get_size_limits
from ._limits import set_size_limits as set_size_limits
from ._limits import size_limits as size_limits
from .em import EMResult as EMResult
from .em import EMState as EMState
from .em import fit_em as fit_em
from .em import run_em as run_em
from .exceptions import ConvergenceWarning as ConvergenceWarning
from .exceptions import DegenerateFitWarning as DegenerateFitWarning
from .exceptions import NotFittedError as NotFittedError
from .labels import CrowdLabels as CrowdLabels
from .labels import as_crowd_labels as as_crowd_labels
from .labels import from_dataframe as from_dataframe
from .labels import from_dense as from_dense
from .labels import from_table as from_table
from .labels import from_triples as from_triples

# models of the labels alone
from .aggregation.dawid_skene import DawidSkene as DawidSkene
from .aggregation.glad import GLAD as GLAD
from .aggregation.mace import MACE as MACE
from .aggregation.majority_vote import MajorityVote as MajorityVote
from .aggregation.multilabel import MultiCrowdLabels as MultiCrowdLabels
from .aggregation.multilabel import MultiLabelDawidSkene as MultiLabelDawidSkene
from .aggregation.multilabel import as_multi_labels as as_multi_labels
from .aggregation.multilabel import from_dense_multi as from_dense_multi
from .aggregation.multilabel import from_quadruples as from_quadruples
from .aggregation.one_coin import OneCoinDawidSkene as OneCoinDawidSkene
from .aggregation.weighted_vote import GoldMajorityVote as GoldMajorityVote
from .aggregation.weighted_vote import Wawa as Wawa
from .aggregation.weighted_vote import WeightedMajorityVote as WeightedMajorityVote
from .aggregation.weighted_vote import ZeroBasedSkill as ZeroBasedSkill

# models that also read features
from .features.latent_class import LatentClassModel as LatentClassModel
from .features.logistic_annotators import LogisticAnnotators as LogisticAnnotators
from .features.naive_bayes import BernoulliNaiveBayes as BernoulliNaiveBayes
from .features.sparse_experts import MajorityVoteLogistic as MajorityVoteLogistic
from .features.sparse_experts import SparseExpertsEM as SparseExpertsEM
from .features.sparse_experts import sparse_experts_path as sparse_experts_path

# agreement, model selection
from .metrics import accuracy_on_aggregates as accuracy_on_aggregates
from .metrics import consistency as consistency
from .metrics import krippendorff_alpha as krippendorff_alpha
from .metrics import posterior_entropy as posterior_entropy
from .metrics import spammer_score as spammer_score
from .metrics import worker_quality_intervals as worker_quality_intervals
from .selection import calibration_curve as calibration_curve
from .selection import expected_calibration_error as expected_calibration_error
from .selection import expected_surrogate_risk as expected_surrogate_risk
from .selection import heldout_label_likelihood as heldout_label_likelihood
from .selection import select_by_surrogate as select_by_surrogate
from .selection import select_penalty as select_penalty
from .selection import surrogate_risk as surrogate_risk
from .selection import true_risk as true_risk

# where to spend the next label
from .active import LabelGains as LabelGains
from .active import ReplayResult as ReplayResult
from .active import expected_label_gains as expected_label_gains
from .active import labelled_pairs as labelled_pairs
from .active import recommend_labels as recommend_labels
from .active import replay_policies as replay_policies

# modules that are attributes of the package (crowdlearn.em.fit_em) but not in __all__
from . import em as em
from . import exceptions as exceptions
from . import frames as frames
from . import labels as labels
from . import solvers as solvers

__version__: str

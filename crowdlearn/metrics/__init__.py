r"""Agreement and uncertainty: how much the crowd agrees, how sure a fitted model is.

* :func:`krippendorff_alpha` -- Krippendorff's alpha with missing values, from
  the coincidence matrix: nominal, interval, ordinal, MASI, Jaccard or any
  distance.
* :func:`posterior_entropy` -- the entropy of each item's posterior under a
  fitted model.
* :func:`consistency`, :func:`accuracy_on_aggregates` -- crowd-kit's metrics:
  how probable the aggregates are under the workers' skills, and how often
  the workers agree with them.
* :func:`spammer_score` -- Raykar and Yu's distance of every worker's
  confusion matrix to a spammer's.
* :func:`worker_quality_intervals` -- confidence intervals for every worker's
  estimated accuracy and confusion matrix under a fitted
  :class:`~crowdlearn.DawidSkene` or :class:`~crowdlearn.OneCoinDawidSkene`:
  bootstrap over items, observed (Louis) information for one-coin accuracies,
  or Beta/Dirichlet intervals from the expected counts.

Everything is vectorised: no Python loop over items or labels. The functions live by
subject in ``agreement.py`` (alpha, :func:`coincidence_matrix`), ``scores.py``
(consistency, accuracy on aggregates, spammer score, entropy), ``intervals.py`` and
``_resample.py`` (the bootstrap); import them from here.

The distances of :func:`krippendorff_alpha` (Krippendorff 2011; Passonneau 2006 for
MASI), :math:`\delta_{pp'}` between the values :math:`p` and :math:`p'`:

* ``"nominal"``: :math:`\delta_{pp'} = 1\{p \ne p'\}`.
* ``"interval"``: :math:`(\mathrm{val}_p - \mathrm{val}_{p'})^2`, :math:`\mathrm{val}_p`
  the numeric value of class :math:`p`: its label when the labels were numbers in a
  table, its index for index-coded labels. String labels are refused.
* ``"ordinal"``: :math:`\big(\sum_{p''=p}^{p'} \mathcal{O}_{p''}
  - \frac{\mathcal{O}_p + \mathcal{O}_{p'}}{2}\big)^2`,
  the classes ranked by value and :math:`\mathcal{O}_{p''}` the marginal counts of the
  coincidence matrix; only the order of the values matters. String labels are
  refused (their order is not known).
* ``"masi"``: :math:`1 - J(A, B)\, M(A, B)` for two sets of tags, :math:`J` the
  Jaccard index :math:`|A \cap B| / |A \cup B|` and :math:`M` 1 if
  :math:`A = B`, 2/3 if one contains the other, 1/3 if they intersect
  otherwise, 0 if they are disjoint. nltk's ``masi_distance``, which crowd-kit
  uses, rounds 2/3 and 1/3 to 0.67 and 0.33, so its alpha differs slightly
  (pass it as the callable to get crowd-kit's number).
* ``"jaccard"``: :math:`1 - J(A, B)`. Two empty sets are equal (distance 0).

The methods of :func:`worker_quality_intervals`, and what each ignores:

**Bootstrap.** Items are resampled with replacement (an item drawn twice
brings all its labels twice) and the model is refitted on each resample by
EM with the model's own E- and M-steps (the Dawid--Skene kernel's, with a batch axis),
``alpha`` and stopping rule, *warm-started from
the fitted parameters*, so that every replicate ends near the fitted
optimum rather than at a relabelled copy of it. All replicates run at once
as one block-diagonal problem (one sparse product per EM step). The hidden
classes of each replicate are then matched to the fitted ones (Dawid--Skene,
and one-coin with two classes, where swapping the classes is a symmetry):
the permutation maximising :math:`\sum_i \sum_n Q^{*}_i(n)\, Q_{\mathrm{orig}(i)}(\text{perm}(n))`,
the agreement of the replicate's posterior :math:`Q^{*}_i` with the original posterior
of the same items (:math:`\mathrm{orig}(i)` the original of the replicate's item
:math:`i`). Intervals are the percentiles
:math:`(1 \mp \text{level})/2` of the replicates. Workers with few labels
are often absent from a resample and then get an uninformative estimate in
that replicate, which widens their interval, as it should.

**Fisher (one-coin).** The parameters are the logits
:math:`\alpha_r = \log\frac{\eta_r}{1 - \eta_r}` of the accuracies
:math:`\eta_r` and the class-prior logits, the vector
:math:`\beta_0` of the :math:`\log(\phi_n/\phi_N)`, :math:`n < N`. By Louis' identity
the observed information of the incomplete-data log-likelihood
:math:`\ell` is the expected complete-data information minus the
information lost by not seeing the classes:

.. math::

    -\nabla^2 \ell(\theta) = \mathbb{E}\big[-\nabla^2 \ell_c \mid \text{labels}\big]
    - \sum_i \operatorname{Cov}_{n \sim Q_i}\big[\nabla \log p(\mathcal{D}_i, y^{(i)} = n)\big],

where :math:`\nabla \log p(\mathcal{D}_i, y^{(i)} = n)` is the gradient of item
:math:`i`'s complete-data log-likelihood when its class is :math:`n` (its expectation
over :math:`Q_i` is the score :math:`\nabla\ell`, Fisher's identity). For the
one-coin model, with :math:`L^{(i)}_{r,p}` the number of labels :math:`p` worker
:math:`r` gave item :math:`i`,

.. math::

    \frac{\partial \ell_c}{\partial \alpha_r} = L^{(i)}_{r, y^{(i)}}
    - \eta_r \sum_p L^{(i)}_{r,p}, \qquad
    \frac{\partial \ell_c}{\partial \beta_0} = \big(1\{y^{(i)} = n\} - \phi_n\big)_{n < N},

since :math:`\partial_{\alpha_r} \log \eta_r = 1 - \eta_r` and
:math:`\partial_{\alpha_r} \log\frac{1 - \eta_r}{N - 1} = -\eta_r`. The complete-data
Hessian does not depend on the classes:
:math:`-\partial^2 \ell_c/\partial\alpha_r^2 = |I_r|\, \eta_r (1 - \eta_r)` and
:math:`-\partial^2 \ell_c/\partial\beta_0\,\partial\beta_0^\top =
m\,(\operatorname{diag}\phi - \phi\phi^\top)`, no cross terms. The centred
scores (minus their mean under :math:`Q_i`) are, in :math:`\alpha_r`,
:math:`\sum_p L^{(i)}_{r,p} \big(1\{p = n\} - Q_i(p)\big)`, and
:math:`1\{n = n'\} - Q_i(n')` in the prior logit of :math:`n'`, so the
lost information is ``S.T @ diag(Q) @ S`` for a sparse
matrix ``S`` with one row per (item, class): exact, analytic, one
sparse product. With ``alpha > 0`` the curvature of the log prior,
:math:`2\alpha \eta_r(1 - \eta_r)` and :math:`\alpha N (\operatorname{diag}\phi -
\phi\phi^\top)`, is added (the information of the log-posterior, a Laplace
approximation). The interval is :math:`\hat\alpha_r` plus or minus ``z`` (the normal
quantile of ``level``) times the square root of entry :math:`(r, r)` of the inverse
information, mapped back by the logistic function, so it stays in
:math:`(0, 1)`; the inverse takes the uncertainty of the class prior and of
the other workers into account. Workers with an estimate on the boundary
(0 or 1, where the logit is infinite) fall back to the ``"counts"``
interval; workers without labels get :math:`(0, 1)`.

**Counts.** Each confusion row is given the Dirichlet distribution of the
expected counts plus the model's pseudo-counts plus one,
:math:`\text{Dir}(C^{(r)}_{n,\cdot} + \alpha + 1)`, (one-coin:
:math:`\text{Beta}(C_r + \alpha + 1, |I_r| - C_r + \alpha + 1)`), whose mode
is the fitted value, and the intervals are its marginal quantiles; the
Dawid--Skene accuracy gets the Beta matching the mean and variance of
:math:`\sum_n \phi_n M^{(r)}_{n,n}` with :math:`\phi` held fixed. This treats the
expected counts as if they were observed: it ignores the uncertainty of the
posterior (and of :math:`\phi`), so the intervals are too narrow when the
classes are uncertain. Fast, deterministic.
"""

from crowdlearn.metrics.agreement import coincidence_matrix, krippendorff_alpha
from crowdlearn.metrics.intervals import WorkerQualityIntervals, worker_quality_intervals
from crowdlearn.metrics.scores import (accuracy_on_aggregates, consistency, posterior_entropy,
                                       spammer_score)

__all__ = ["krippendorff_alpha", "coincidence_matrix", "posterior_entropy",
           "worker_quality_intervals", "WorkerQualityIntervals", "consistency",
           "accuracy_on_aggregates", "spammer_score"]

"""Models that read the items' features as well as (or instead of) the labels: Naive Bayes,
the latent-class network, logistic annotators, L1-sparse experts."""

"""Label models that read the crowd's labels only: majority and weighted votes, Dawid--Skene
and one-coin, GLAD, MACE, multi-label Dawid--Skene."""

"""Label models that read the crowd's labels only: majority and weighted votes (skills
given, from agreement, or from gold items), Dawid--Skene and one-coin, GLAD, MACE,
multi-label Dawid--Skene."""

"""The pure render: cluster snapshot in, twp.yaml bytes, statuses and events out."""

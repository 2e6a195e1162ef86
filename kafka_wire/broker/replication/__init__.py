"""Replication between brokers: the follower fetchers, ISR changes through the controller, the
replica manager that turns metadata deltas into replica roles, and the offset checkpoints."""

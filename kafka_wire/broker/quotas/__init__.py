"""Client quotas on the broker: rates measured over sampled windows (``rate``), the quota that
applies to a (user, client id) and the throttle time of a request over it (``manager``)."""

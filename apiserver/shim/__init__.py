"""The scheduler shim: a kube-scheduler extender (filter, prioritize, bind) that asks the
allocation API and writes what it answered; it decides nothing itself (DESIGN §8)."""

"""A stand-in for kube-scheduler, for standalone mode only: it places the pods that name it
by asking the scheduler shim (filter, prioritize, bind over HTTPS, as kube-scheduler asks an
extender) and binding each to the best-scored node. It decides nothing itself; in a real
cluster kube-scheduler does this job (DESIGN §8)."""

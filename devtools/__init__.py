"""What the tests and the benchmarks share, kept out of the shipped ``apiserver`` package:
waiting on a condition (``waiting``), running a child process until it is ready
(``process``), and a local etcd (``localetcd``)."""

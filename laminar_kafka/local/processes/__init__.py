"""Local daemons as OS processes: liveness, process groups, loopback ports, home locks.

What the broker and the cluster folders both need to run JVMs on this
machine; they sit on one layer and cannot import each other, so it lives here.
"""

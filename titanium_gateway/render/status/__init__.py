"""Status: what the render says on each object, built in one package.

* :mod:`.conditions` - one builder of conditions (observedGeneration, kept transition times);
* :mod:`.programmed` - the Programmed decision from a data plane's delivery, the statuses built
  from the outcomes, and ``reprogram`` (the same, again, when only the data plane's answer changed);
* :mod:`.routes`, :mod:`.gatewayclass`, :mod:`.policies`, :mod:`.ingress` - the statuses of
  the other kinds from the typed outcomes their translators record (conditions as
  ``(type, status, reason, message)``, the per-object fields);
* :mod:`.collector` - :class:`~.collector.StatusCollector`, where a render's statuses, releases
  and outcomes are recorded and finished.

The merge of our status with other controllers' entries is ``render/statusmerge.py``; the
writer (``writers/status.py``) only writes what it is given.
"""

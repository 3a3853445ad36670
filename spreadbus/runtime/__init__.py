"""The imperative shell shared by the services: settings, NATS, health, logging, processes.

One module per concern, each with its signatures in its docstring:

- :mod:`~spreadbus.runtime.settings`: flags and ``SPREADBUS_*`` variables into a frozen
  pydantic-settings model;
- :mod:`~spreadbus.runtime.json_logging`: one JSON object per log line;
- :mod:`~spreadbus.runtime.health`: ``/healthz``, ``/readyz`` (a :class:`ReadinessGate`),
  ``/metrics`` (the service's own prometheus registry);
- :mod:`~spreadbus.runtime.shutdown`: SIGTERM/SIGINT set an event, pauses end when it is set;
- :mod:`~spreadbus.runtime.nats_connection`: URL list, credentials or nkey, TLS, reconnect forever;
- :mod:`~spreadbus.runtime.bus_layout`: every stream and bucket of the bus, and what each service
  needs of them;
- :mod:`~spreadbus.runtime.stream_setup`: create or update the bus streams;
- :mod:`~spreadbus.runtime.bus_setup`: the setup step: create or update every stream and bucket;
- :mod:`~spreadbus.runtime.bus_presence`: a service waits, unready, until what it needs exists;
- :mod:`~spreadbus.runtime.bus_permissions` and :mod:`~spreadbus.runtime.bus_users`: each bus
  user's permissions and nkeys;
- :mod:`~spreadbus.runtime.consumer_names`: unguessable names for a client's own consumers;
- :mod:`~spreadbus.runtime.follower`: replay a stream into a projection, then follow it live;
- :mod:`~spreadbus.runtime.lease`: one leader at a time through a NATS KV key;
- :mod:`~spreadbus.runtime.snapshot_store`: projection snapshots in the JetStream object store;
- :mod:`~spreadbus.runtime.kube_client`: Kubernetes configuration, raw JSON requests, errors;
- :mod:`~spreadbus.runtime.rate_limit`: client-side QPS and burst;
- :mod:`~spreadbus.runtime.service`: all of the above wired into one ``run_service`` shell,
  whose stop is bounded whatever NATS does;
- :mod:`~spreadbus.runtime.nats_server`: a local nats-server for the stack and the tests;
- :mod:`~spreadbus.runtime.parent_death`: child processes that die with their parent.
"""

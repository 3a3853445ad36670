"""Keys of the key-value buckets features keep on the bus, one entry per object of one cluster.

A feature that shares state between replicas by compare-and-set (WorkloadSpread's reservations,
PodUnavailableBudget's spending) keeps one entry per object in a JetStream key-value bucket of
its own. Its bucket name and entry schema are the feature's; the key layout is common, and part
of the bus contract: any subscriber reads a bucket's stream the same way.

Keys. ``<cluster>.<namespace>.<name>``, each token escaped with :func:`events.subjects.escape`
and then ``%`` written as ``=``: KV keys forbid ``%`` while ``=`` never appears in an escaped
token, so :func:`key_tokens` recovers the escaped tokens exactly. A watcher of a bucket sees
subjects ``$KV.<bucket>.<key>`` (:func:`subject_prefix`) on the stream ``KV_<bucket>``
(:func:`stream_of`); :func:`entry_of` reads a subject's cluster and object back. A deleted or
purged key arrives as an empty body.
"""

from __future__ import annotations

from events.subjects import SubjectError, escape, unescape


def stream_of(bucket: str) -> str:
    """The stream JetStream keeps a bucket in."""
    return f"KV_{bucket}"


def kv_token(value: str) -> str:
    """One KV key token for any string (see the module docstring)."""
    return escape(value).replace("%", "=")


def entry_key(cluster: str, namespace: str, name: str) -> str:
    """The key of one object's entry."""
    return ".".join(kv_token(t) for t in (cluster, namespace, name))


def subject_prefix(bucket: str, cluster: str) -> str:
    """Subjects of one cluster's entries in the bucket's stream start with this."""
    return f"$KV.{bucket}.{kv_token(cluster)}."


def key_tokens(rest: str) -> str:
    """What follows :func:`subject_prefix`, with each token back in subject escape form."""
    return rest.replace("=", "%")


def bucket_prefix(bucket: str) -> str:
    """Subjects of every cluster's entries in the bucket's stream start with this."""
    return f"$KV.{bucket}."


def entry_of(bucket_prefix_length: int, subject: str) -> tuple[str, str] | None:
    """The cluster (unescaped) and object key (escaped ``namespace.name``) of an entry's
    subject, whose first ``bucket_prefix_length`` characters are :func:`bucket_prefix`;
    ``None`` for a key of another layout."""
    cluster, _, key = key_tokens(subject[bucket_prefix_length:]).partition(".")
    if key.count(".") != 1:
        return None
    try:
        return unescape(cluster), key
    except SubjectError:
        return None

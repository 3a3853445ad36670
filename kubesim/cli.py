"""``spreadbus kubesim`` / ``python -m kubesim``: serve the simulator until SIGTERM or SIGINT.

The kubeconfig is written only once the server accepts connections, so a script may wait for
the file to appear and then use it. The URL is printed on stdout (one line) at the same moment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import ssl
import sys
from pathlib import Path

from kubesim import behaviour
from kubesim.server import KubeSim
from kubesim.webhook_client import ClientCertificate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=6443,
        help="port to listen on; 0 picks a free one (default 6443)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="write a kubeconfig for the server here once it is ready",
    )
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain HTTP instead of HTTPS with a generated CA",
    )
    parser.add_argument(
        "--token",
        help="bearer token clients must present (default: a random one, written to the kubeconfig)",
    )
    parser.add_argument(
        "--state", type=Path, metavar="FILE", help="persist objects in FILE across restarts"
    )
    parser.add_argument(
        "--watch-history",
        type=int,
        default=10_000,
        metavar="N",
        help="events kept for watch resumption; older versions get 410 Gone (default 10000)",
    )
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between watch BOOKMARK events (default 60)",
    )
    parser.add_argument(
        "--webhook-client-cert",
        type=Path,
        metavar="FILE",
        help="PEM client certificate presented to every admission webhook, as the API "
        "server's AdmissionConfiguration kubeconfig names one (with --webhook-client-key)",
    )
    parser.add_argument(
        "--webhook-client-cert-for-conversions",
        action="store_true",
        help="present --webhook-client-cert to CRD conversion webhooks too; kube-apiserver has "
        "no setting for this and presents none there",
    )
    parser.add_argument(
        "--webhook-client-key",
        type=Path,
        metavar="FILE",
        help="PEM private key of --webhook-client-cert",
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    behaviour.add_arguments(parser)


def webhook_client_certificate(args: argparse.Namespace) -> ClientCertificate | None:
    """The client certificate the flags name, checked to load; :class:`ValueError` says why
    not."""
    cert, key = args.webhook_client_cert, args.webhook_client_key
    if cert is None and key is None:
        if args.webhook_client_cert_for_conversions:
            raise ValueError("--webhook-client-cert-for-conversions needs --webhook-client-cert")
        return None
    if cert is None or key is None:
        raise ValueError("--webhook-client-cert and --webhook-client-key go together")
    identity = ClientCertificate(cert, key)
    try:
        identity.present_with(ssl.create_default_context())
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"--webhook-client-cert: cannot load {cert} with {key}: {e}") from e
    return identity


async def serve(args: argparse.Namespace) -> int:
    try:
        identity = webhook_client_certificate(args)
    except ValueError as e:
        print(f"kubesim: {e}", file=sys.stderr)
        return 2
    sim = KubeSim(
        host=args.host,
        port=args.port,
        tls=not args.insecure_http,
        token=args.token,
        state_file=args.state,
        watch_history=args.watch_history,
        bookmark_interval=args.bookmark_interval,
        behaviours=behaviour.build_behaviours(args),
        # The behaviour's flag plays the apiserver's --default-*-toleration-seconds.
        default_toleration_seconds=args.sim_default_toleration_seconds,
        webhook_client_certificate=identity,
        webhook_client_certificate_for_conversions=args.webhook_client_cert_for_conversions,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await sim.start()
    try:
        if args.kubeconfig is not None:
            sim.write_kubeconfig(args.kubeconfig)
        print(sim.url, flush=True)
        await stop.wait()
    finally:
        await sim.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING), stream=sys.stderr
    )
    try:
        return asyncio.run(serve(args))
    except OSError as e:
        print(f"kubesim: {e}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubesim", description="Kubernetes API server simulator")
    add_arguments(parser)
    return run(parser.parse_args(argv))

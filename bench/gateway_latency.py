"""Added latency of kloop's model gateway per request: the same client, direct vs through the gateway.

`python bench/gateway_latency.py [--n 200]` sends N Chat Completions requests (plain JSON and SSE
streams) with the official OpenAI SDK to kloop's scripted server on 127.0.0.1, alternating direct
and gateway requests so load drifts hit both alike, and prints the median and p90 of each and of
the difference. The upstream is local, so the figures are the gateway's own cost.
"""

from __future__ import annotations

import argparse
import statistics
import time

from openai import OpenAI

from kloop.agents.gateway import Gateway
from kloop.agents.scripted_server import Script, ScriptedServer

ASK = [{"role": "user", "content": "x"}]


def _time(client: OpenAI, stream: bool) -> float:
    started = time.perf_counter()
    if stream:
        for _ in client.chat.completions.create(model="m", messages=ASK, stream=True):
            pass
    else:
        client.chat.completions.create(model="m", messages=ASK)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    ns = parser.parse_args()
    with ScriptedServer(Script(final="ok")) as srv, Gateway(srv.base_url + "/v1", "sk-real") as gw:
        direct = OpenAI(base_url=srv.base_url + "/v1", api_key="sk-real", max_retries=0)
        through = OpenAI(base_url=gw.client_url, api_key=gw.token, max_retries=0)
        for stream in (False, True):
            for client in (direct, through):  # warm both paths
                _time(client, stream)
            pairs = [(_time(direct, stream), _time(through, stream)) for _ in range(ns.n)]
            d, g = [p[0] for p in pairs], [p[1] for p in pairs]
            added = [b - a for a, b in pairs]
            q = lambda xs: (statistics.median(xs), statistics.quantiles(xs, n=10)[-1])  # noqa: E731
            print(f"{'stream' if stream else 'json  '} n={ns.n}: direct median {q(d)[0]:.2f} ms p90 {q(d)[1]:.2f}; "
                  f"gateway median {q(g)[0]:.2f} ms p90 {q(g)[1]:.2f}; added median {q(added)[0]:.2f} ms "
                  f"p90 {q(added)[1]:.2f}")


if __name__ == "__main__":
    main()

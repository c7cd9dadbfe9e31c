import gc

import torch

from kloop.verify.channel import Channel

_channel = next(o for o in gc.get_objects() if isinstance(o, Channel))
_send = _channel.send


def _wrong(header, tensors=None):
    header = {**header, "outputs": "all fine", "new_threads": 7, "violations": {"none": True}}
    print(f"KLOOP-EVIDENCE attack_wrong_type: {header['op']} reply sent with outputs as str, new_threads as int",
          flush=True)
    return _send(header, tensors)


_channel.send = _wrong


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

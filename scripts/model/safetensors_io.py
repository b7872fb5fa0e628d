"""A minimal safetensors writer/reader (the format: 8-byte little-endian header length, a JSON
header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the raw
little-endian data). Written here rather than imported because Debian has no python3-safetensors.
"""
import json
import struct

import numpy as np
import torch

NUMPY_DTYPE = {"F16": "<f2", "F32": "<f4"}


def write(path, tensors, metadata, dtype="F16"):
    """tensors: name -> torch tensor (stored in the given order, contiguously)."""
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        data = t.detach().cpu().numpy().astype(NUMPY_DTYPE[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # pad so that the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for data in chunks:
            f.write(data)


def read(path):
    """Returns (name -> float64 torch tensor, metadata) exactly as stored (f16 widened exactly)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    base, tensors = 8 + n, {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        arr = np.frombuffer(blob[base + begin:base + end], dtype=NUMPY_DTYPE[info["dtype"]])
        tensors[name] = torch.from_numpy(arr.astype(np.float64)).reshape(info["shape"])
    return tensors, metadata

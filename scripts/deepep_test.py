"""Runs one of DeepEP's own test scripts (tests/test_low_latency.py or
tests/test_intranode.py of a DeepEP checkout, v1.2.1) against
gin_comm.deep_ep, with every rank on one GPU:

    python3 scripts/deepep_test.py DEEPEP_DIR/tests/test_low_latency.py \
        --num-processes 4 --num-experts 32 [the script's own options]

The script runs as DeepEP ships it. What changes is only what DeepEP
says to adapt and what one GPU forces:
- `import deep_ep` finds gin_comm.deep_ep;
- utils.init_dist (DeepEP: "you may rewrite this function with your own
  cluster settings") makes a gloo group with every rank on device 0
  (NCCL refuses two ranks on one GPU), and keeps the rest of what
  DeepEP's does (default dtype bf16, default device cuda);
- gloo has no all_gather_into_tensor and no collectives of CUDA tensors
  for some calls: all_gather_into_tensor, all_gather and all_reduce of
  CUDA tensors go through host copies.
--pressure SEEDS,REPS runs DeepEP's pressure loop bounded: test_main for
seeds 0..SEEDS-1, each REPS more times with the same hash (DeepEP's
loop is unbounded). The ranks share the GPU: start an MPS daemon first
(scripts/deepep-test.sh does).
"""

import importlib
import os
import sys
import textwrap
import weakref

_ENV = "GIN_DEEPEP_TEST_SCRIPT"


def _bridge(dist):
    """gloo's collectives for CUDA tensors, through host copies: gloo has
    no all_gather_into_tensor, and not every collective of CUDA tensors."""
    import torch
    gather, reduce = dist.all_gather, dist.all_reduce

    def all_gather_into_tensor(output, input, group=None, async_op=False):
        n = dist.get_world_size(group)
        parts = [torch.empty_like(input, device="cpu") for _ in range(n)]
        gather(parts, input.contiguous().cpu(), group=group)
        output.copy_(torch.stack(parts).view_as(output))
        return _Done() if async_op else None

    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        if not tensor.is_cuda:
            return reduce(tensor, op=op, group=group, async_op=async_op)
        host = tensor.cpu()
        reduce(host, op=op, group=group)
        tensor.copy_(host)
        return _Done() if async_op else None

    def all_gather(outputs, input, group=None, async_op=False):
        if not input.is_cuda:
            return gather(outputs, input, group=group, async_op=async_op)
        parts = [torch.empty_like(input, device="cpu") for _ in outputs]
        gather(parts, input.contiguous().cpu(), group=group)
        for o, p in zip(outputs, parts):
            o.copy_(p)
        return _Done() if async_op else None

    dist.all_gather_into_tensor = all_gather_into_tensor
    dist.all_reduce = all_reduce
    dist.all_gather = all_gather


class _Done:
    """The work handle of a collective that finished in its call."""

    def wait(self, *args):
        return True

    def is_completed(self):
        return True


def _init_dist(local_rank, num_local_ranks):
    """DeepEP's init_dist for ranks sharing device 0: a gloo group."""
    import torch
    import torch.distributed as dist
    ip = os.getenv("MASTER_ADDR", "127.0.0.1")
    port = int(os.getenv("MASTER_PORT", "8361"))
    dist.init_process_group(backend="gloo", init_method=f"tcp://{ip}:{port}",
                            world_size=num_local_ranks, rank=local_rank)
    torch.set_default_dtype(torch.bfloat16)
    torch.set_default_device("cuda")
    torch.cuda.set_device(0)
    return dist.get_rank(), dist.get_world_size(), \
        dist.new_group(list(range(num_local_ranks)))


def _setup(script):
    """In the launcher and in every spawned rank, before DeepEP's code is
    imported: gin's deep_ep, DeepEP's utils with init_dist replaced."""
    import torch.distributed as dist
    import gin_comm.deep_ep
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    sys.modules["deep_ep"] = gin_comm.deep_ep
    _bridge(dist)
    import utils  # DeepEP's tests/utils.py
    utils.init_dist = _init_dist
    init = gin_comm.deep_ep.Buffer.__init__

    def buffer_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _buffers.add(self)
    gin_comm.deep_ep.Buffer.__init__ = buffer_init


def _script_module():
    """DeepEP's test script (named by _ENV) as a module, imported after
    _setup (its `import deep_ep` finds gin's)."""
    return importlib.import_module(
        os.path.splitext(os.path.basename(os.environ[_ENV]))[0])


def _pressure(seeds, reps):
    """DeepEP's pressure loop (test_loop's), bounded: every seed's hash
    again reps times."""
    import torch.multiprocessing as mp
    args = _parse(_script_module())
    mp.spawn(_rank, args=("_pressure_rank", args, seeds, reps),
             nprocs=args.num_processes)


def _parse(mod):
    """The script's own options (its parser is built under __main__:
    rebuilt here from the same source lines)."""
    import argparse
    with open(mod.__file__) as f:
        src = f.read()
    body = src[src.index("parser = argparse.ArgumentParser"):
               src.index("args = parser.parse_args()")]
    ns = {"argparse": argparse}
    exec(textwrap.dedent("    " + body), ns)
    return ns["parser"].parse_args(sys.argv[1:])


def _pressure_rank(local_rank, args, seeds, reps):
    mod = _script_module()
    import deep_ep
    import torch.distributed as dist
    rank, num_ranks, group = mod.init_dist(local_rank, args.num_processes)
    hint = deep_ep.Buffer.get_low_latency_rdma_size_hint(
        args.num_tokens, args.hidden, num_ranks, args.num_experts)
    buffer = deep_ep.Buffer(group, num_rdma_bytes=hint, low_latency_mode=True,
                            num_qps_per_rank=args.num_experts // num_ranks,
                            explicitly_destroy=True)
    for seed in range(seeds):
        if local_rank == 0:
            print(f"Testing with seed {seed} ...", flush=True)
        ref = mod.test_main(args.num_tokens, args.hidden, args.num_experts,
                            args.num_topk, rank, num_ranks, group, buffer,
                            use_logfmt=args.use_logfmt, seed=seed)
        for _ in range(reps):
            got = mod.test_main(args.num_tokens, args.hidden,
                                args.num_experts, args.num_topk, rank,
                                num_ranks, group, buffer,
                                use_logfmt=args.use_logfmt, seed=seed)
            assert got == ref, f"Error: seed={seed}"
    buffer.destroy()
    dist.barrier()
    dist.destroy_process_group()
    if local_rank == 0:
        print(f"pressure: {seeds} seeds x {reps + 1} runs, equal hashes",
              flush=True)


_buffers = weakref.WeakSet()  # this rank's deep_ep.Buffers (_rank's report)


def _rank(local_rank, name, *args):
    """A spawned rank: the script's function `name` (or this file's, for a
    name with a leading underscore); when it raises, gin's own error (a
    device wait that timed out, a peer that died) is printed too, since
    DeepEP's checks fail on the results first."""
    if name.startswith("_"):
        fn = globals()[name]
    else:
        fn = getattr(_script_module(), name)
    try:
        return fn(local_rank, *args)
    except BaseException:
        for b in _buffers:
            comm = getattr(b, "_comm", None)
            try:
                if comm is not None:
                    comm.check_async()
            except Exception as e:  # noqa: BLE001 - reported, then re-raised
                print(f"[rank {local_rank}] gin: {e}", file=sys.stderr,
                      flush=True)
        raise


def _spawn_by_name(orig):
    """torch.multiprocessing.spawn for a function of the script run as
    __main__: the ranks import it from the script's module instead."""

    def spawn(fn, args=(), nprocs=1, **kwargs):
        return orig(_rank, args=(fn.__name__,) + tuple(args), nprocs=nprocs,
                    **kwargs)
    return spawn


if os.environ.get(_ENV):  # a spawned rank, or the launcher below
    _setup(os.environ[_ENV])

if __name__ == "__main__":
    if len(sys.argv) < 2 or not sys.argv[1].endswith(".py"):
        sys.exit(__doc__)
    script = os.path.abspath(sys.argv.pop(1))
    pressure = None
    if "--pressure" in sys.argv:
        i = sys.argv.index("--pressure")
        try:
            pressure = tuple(int(v) for v in sys.argv[i + 1].split(","))
        except (IndexError, ValueError):
            pressure = ()
        if len(pressure) != 2 or min(pressure) < 1:
            sys.exit("--pressure takes SEEDS,REPS (two whole numbers >= 1)")
        del sys.argv[i:i + 2]
    os.environ[_ENV] = script
    _setup(script)
    import torch.multiprocessing as mp
    if pressure:
        _pressure(*pressure)
    else:
        mp.spawn = _spawn_by_name(mp.spawn)
        import torch
        torch.multiprocessing.spawn = mp.spawn
        # Run as __main__ while sys.modules["__main__"] stays this module:
        # the spawned ranks re-import this file (which sets them up), not
        # DeepEP's script.
        sys.argv[0] = script
        with open(script) as f:
            code = compile(f.read(), script, "exec")
        exec(code, {"__name__": "__main__", "__file__": script,
                    "__builtins__": __builtins__})

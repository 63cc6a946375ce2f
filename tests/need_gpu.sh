#!/bin/sh
# need_gpu.sh COMMAND...: runs COMMAND where nvidia-smi lists a GPU, else
# skips (77). For the cuda rows whose programs (examples, tools) do not
# skip by themselves on a machine without one.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
exec "$@"

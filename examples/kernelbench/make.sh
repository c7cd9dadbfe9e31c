#!/usr/bin/env bash
# Re-create the example tasks from the KernelBench problem files in problems/ (MIT, see problems/LICENSE).
# Each is imported with --max-bytes so its baseline verifies on a CPU in seconds:
#   bash examples/kernelbench/make.sh && kloop verify examples/kernelbench/relu examples/kernelbench/relu/baseline --no-timing
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kloop="${KLOOP:-$here/../../.venv/bin/kloop}"
while read -r name file bytes extra; do
  # shellcheck disable=SC2086  # $extra holds zero or more flags
  "$kloop" task import-kernelbench "$here/problems/$file" -o "$here/$name" --name "kb_$name" --max-bytes "$bytes" --force $extra
done <<'LIST'
relu level1_19_ReLU.py 2000000
square_matmul level1_1_Square_matrix_multiplication_.py 1000000
layernorm level1_40_LayerNorm.py 2000000
cross_entropy level1_95_CrossEntropyLoss.py 1000000
conv2d_relu_biasadd level2_1_Conv2D_ReLU_BiasAdd.py 2000000
conv2d_relu_biasadd_weights level2_1_Conv2D_ReLU_BiasAdd.py 2000000 --weights-as-inputs
mlp level3_1_MLP.py 1000000
LIST

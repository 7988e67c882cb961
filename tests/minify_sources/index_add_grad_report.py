from math import inf
from math import nan

NoneType = type(None)
import torch
from torch import device
import torch.fx._pytree as fx_pytree
import torch.utils._pytree as pytree
import thunder

from thunder.dev_utils import nvtx_profile_transform


class DynamoModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 3][3, 1]cpu", L_y_: "f32[4, 3][3, 1]cpu", L_w_: "f32[4, 3][3, 1]cpu"):
        l_x_ = L_x_
        l_y_ = L_y_
        l_w_ = L_w_

        # File: model.py:4 in model, code: a = torch.sin(x)
        a: "f32[4, 3][3, 1]cpu" = torch.sin(l_x_)

        # File: model.py:5 in model, code: b = a * y
        b: "f32[4, 3][3, 1]cpu" = a * l_y_

        # File: model.py:6 in model, code: c = torch.tanh(b) + w
        tanh: "f32[4, 3][3, 1]cpu" = torch.tanh(b)
        b = None
        c: "f32[4, 3][3, 1]cpu" = tanh + l_w_
        tanh = None

        # File: model.py:7 in model, code: d = c.relu()
        d: "f32[4, 3][3, 1]cpu" = c.relu()
        c = None

        # File: model.py:8 in model, code: e = torch.cos(d) * x
        cos: "f32[4, 3][3, 1]cpu" = torch.cos(d)
        d = None
        e: "f32[4, 3][3, 1]cpu" = cos * l_x_
        cos = l_x_ = None

        # File: model.py:9 in model, code: f = e - y
        f: "f32[4, 3][3, 1]cpu" = e - l_y_
        l_y_ = None

        # File: model.py:10 in model, code: idx = torch.tensor([0, 2])
        idx: "i64[2][1]cpu" = torch.tensor([0, 2])

        # File: model.py:11 in model, code: g = torch.index_add(f, 0, idx, w[:2])
        getitem: "f32[2, 3][3, 1]cpu" = l_w_[slice(None, 2, None)]
        l_w_ = None
        g: "f32[4, 3][3, 1]cpu" = torch.index_add(f, 0, idx, getitem)
        f = idx = getitem = None

        # File: model.py:12 in model, code: h = torch.sigmoid(g)
        h: "f32[4, 3][3, 1]cpu" = torch.sigmoid(g)
        g = None

        # File: model.py:13 in model, code: k = h * a
        k: "f32[4, 3][3, 1]cpu" = h * a
        h = a = None

        # File: model.py:14 in model, code: m = k.sum(dim=1)
        m: "f32[4][1]cpu" = k.sum(dim=1)
        k = None

        # File: model.py:15 in model, code: n = torch.exp(m)
        n: "f32[4][1]cpu" = torch.exp(m)
        m = None
        return (n, e)


def test_graph0():
    inputs = [
        torch.testing.make_tensor(
            (4, 3),
            dtype=torch.float32,
            device="cpu",
            requires_grad=True,
            low=-1.501481294631958,
            high=1.7242330312728882,
        ),
        torch.testing.make_tensor(
            (4, 3),
            dtype=torch.float32,
            device="cpu",
            requires_grad=True,
            low=-2.2302703857421875,
            high=0.5936571359634399,
        ),
        torch.testing.make_tensor(
            (4, 3),
            dtype=torch.float32,
            device="cpu",
            requires_grad=True,
            low=-0.6586240530014038,
            high=1.6715422868728638,
        ),
    ]

    model = DynamoModule()
    compiled_model = thunder.jit(model)
    from thunder.dynamo.report import run_forward_backward

    fwd_result, grads = run_forward_backward(compiled_model, *inputs)


if __name__ == "__main__":
    test_graph0()


"""
Environment information get from `torch.utils.collect_env.get_pretty_env_info()`:
CUDA devices:
CUDA version: 12.8
numpy==2.4.6
nvidia-cublas-cu12==12.8.4.1
nvidia-cuda-cupti-cu12==12.8.90
nvidia-cuda-nvrtc-cu12==12.8.93
nvidia-cuda-runtime-cu12==12.8.90
nvidia-cudnn-cu12==9.10.2.21
nvidia-cufft-cu12==11.3.3.83
nvidia-curand-cu12==10.3.9.90
nvidia-cusolver-cu12==11.7.3.90
nvidia-cusparse-cu12==12.5.8.93
nvidia-cusparselt-cu12==0.7.1
nvidia-nccl-cu12==2.27.5
nvidia-nvjitlink-cu12==12.8.93
nvidia-nvtx-cu12==12.8.90
optree==0.20.0
torch==2.9.1
triton==3.5.1

Versions of Thunder related libraries:
lightning-thunder==0.2.6


"""

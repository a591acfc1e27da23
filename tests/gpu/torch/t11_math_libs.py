#!/usr/bin/env python3
"""t11: the CUDA math libraries as Python users call them, each result
reduced to checksums (sum, abs-sum, first values) and checked against NumPy,
SciPy or torch's CPU kernels in float64, with a tolerance:
  cuFFT     torch.fft.rfft/irfft/fft2, torch.stft, cupy.fft.fft/ifft;
            torchaudio's MelSpectrogram ("missing" if torchaudio does not
            import);
  cuRAND    torch.randn/rand on cuda after torch.cuda.manual_seed (Philox,
            curand device functions) and cupy.random.RandomState (the
            cuRAND host library);
  cuSPARSE  torch sparse CSR @ dense, cupyx.scipy.sparse csr_matrix @ vector;
  cuSOLVER  torch.linalg solve/eigh/svd/cholesky, cupy.linalg.solve;
  NCCL      one rank: init_process_group("nccl"), all_reduce,
            all_gather_into_tensor, broadcast;
  cuDNN     conv2d forward and backward in fp32 (no TF32), deterministic.
Each section runs on its own: an exception becomes {"error": ...} for that
section (and a failed check), and the other sections still run.

Compare: relative difference <= 1e-5: cuSPARSE's default CSR algorithms do
not promise the same summation order from run to run; the other libraries
are deterministic here. The random draws also carry a sha256 of their bytes,
a string, which compare.py always compares exactly."""
import datetime
import hashlib
import os
import socket
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.fresh_cache_dir("CUPY_CACHE_DIR")

NAME = "t11_math_libs"
try:
    import numpy as np
    import scipy.sparse
except Exception as e:  # noqa: BLE001
    common.fail(NAME, e)

fhex, hexlist = common.fhex, common.hexlist


# ------------------------------------------------------------------ helpers
def sums(a):
    """Checksums of an array: float64 sum and abs-sum, and the first four
    values; a complex array gives them for its real and imaginary parts, less
    the imaginary parts' sum (near 0: the spectrum of real data is symmetric,
    so its value would be only rounding)."""
    a = np.asarray(a).ravel()
    if np.iscomplexobj(a):
        im = sums(a.imag)
        del im["sum"]
        return {"re": sums(a.real), "im": im}
    f = a.astype(np.float64)
    return {"sum": fhex(f.sum()), "abs_sum": fhex(np.abs(f).sum()), "first4": hexlist(a[:4])}


def digest(a):
    """sha256 of an array's bytes: compared exactly by compare.py."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def close(check, what, got, want, tol):
    """Check max |got - want| <= tol * max |want|."""
    got, want = np.asarray(got), np.asarray(want)
    ok = got.shape == want.shape
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-300)) if ok else np.inf
    check(ok and err <= tol, f"{what}: shape {got.shape} vs {want.shape}, "
          f"max error / max value {err:.3g} <= {tol}")


def host(t):
    """A torch tensor's values as a NumPy array (copied to the CPU)."""
    return t.detach().cpu().numpy()


def data(seed, shape, dtype=np.float32, kind="normal"):
    """Fixed random data, made on the CPU."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.random(shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# -------------------------------------------------------------------- cuFFT
def torch_fft(check, torch):
    x = data(1, 4096)
    X = torch.fft.rfft(torch.from_numpy(x).cuda())
    back = host(torch.fft.irfft(X, n=x.size))
    X = host(X)
    close(check, "torch.fft.rfft", X, np.fft.rfft(x.astype(np.float64)), 1e-5)
    close(check, "torch.fft.irfft(rfft(x))", back, x, 1e-5)
    m = data(2, (64, 128))
    F = host(torch.fft.fft2(torch.from_numpy(m).cuda()))
    close(check, "torch.fft.fft2", F, np.fft.fft2(m.astype(np.float64)), 1e-5)
    return {"rfft": sums(X), "irfft": sums(back), "fft2": sums(F)}


def numpy_stft(x, window, n_fft, hop):
    """torch.stft(center=True, pad_mode="reflect", onesided) in NumPy."""
    xp = np.pad(x.astype(np.float64), n_fft // 2, mode="reflect")
    frames = np.stack([xp[i:i + n_fft] for i in range(0, xp.size - n_fft + 1, hop)])
    return np.fft.rfft(frames * window, axis=-1).T


def torch_stft(check, torch):
    x = data(3, 8000)
    window = torch.hann_window(256)  # CPU, periodic
    S = host(torch.stft(torch.from_numpy(x).cuda(), n_fft=256, hop_length=64,
                        window=window.cuda(), center=True, pad_mode="reflect",
                        return_complex=True))
    close(check, "torch.stft", S, numpy_stft(x, window.double().numpy(), 256, 64), 1e-5)
    return {"shape": list(S.shape), "stft": sums(S)}


def torchaudio_mel(check, torch):
    try:
        import torchaudio
    except Exception as e:  # noqa: BLE001 - optional package
        print(f"{NAME}: torchaudio does not import: {type(e).__name__}: {e}", file=sys.stderr)
        return "missing"
    args = dict(sample_rate=16000, n_fft=400, hop_length=160, n_mels=40)
    wave = torch.from_numpy(data(4, 16000))
    M = host(torchaudio.transforms.MelSpectrogram(**args).cuda()(wave.cuda()))
    ref = host(torchaudio.transforms.MelSpectrogram(**args).double()(wave.double()))
    close(check, "torchaudio MelSpectrogram", M, ref, 1e-4)
    return {"shape": list(M.shape), "mel": sums(M)}


def cupy_fft(check, cp):
    x = data(5, 4096)
    X = cp.fft.fft(cp.asarray(x))
    back = cp.asnumpy(cp.fft.ifft(X))
    X = cp.asnumpy(X)
    close(check, "cupy.fft.fft", X, np.fft.fft(x.astype(np.float64)), 1e-5)
    close(check, "cupy.fft.ifft(fft(x))", back, x, 1e-5)
    return {"fft": sums(X), "ifft_real": sums(back.real)}


# ------------------------------------------------------------------- cuRAND
def check_draws(check, what, normal, uniform):
    check(abs(normal.mean()) < 0.02 and abs(normal.std() - 1) < 0.02,
          f"{what} normal: mean {normal.mean():.4f}, std {normal.std():.4f}")
    check(uniform.min() >= 0 and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.01,
          f"{what} uniform: min {uniform.min()}, max {uniform.max()}, mean {uniform.mean():.4f}")
    return {"normal": sums(normal), "normal_sha256": digest(normal),
            "uniform": sums(uniform), "uniform_sha256": digest(uniform)}


def torch_rand(check, torch):
    torch.cuda.manual_seed(1234)
    normal = host(torch.randn(1 << 16, device="cuda"))
    uniform = host(torch.rand(1 << 16, device="cuda"))
    return check_draws(check, "torch.cuda", normal, uniform)


def cupy_rand(check, cp):
    rs = cp.random.RandomState(seed=1234)
    normal = cp.asnumpy(rs.standard_normal(1 << 16, dtype=cp.float32))
    uniform = cp.asnumpy(rs.random_sample(1 << 16, dtype=cp.float32))
    return check_draws(check, "cupy RandomState", normal, uniform)


# ----------------------------------------------------------------- cuSPARSE
def sparse_matrix(seed, shape, density=0.05):
    """A CSR matrix with values in [0, 1): positive, so sums do not cancel."""
    dense = data(seed, shape, kind="uniform")
    dense[data(seed + 1, shape, kind="uniform") >= density] = 0
    return scipy.sparse.csr_matrix(dense)


def torch_sparse(check, torch):
    A = sparse_matrix(6, (256, 512))
    B = data(8, (512, 64), kind="uniform")
    At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr).long(), torch.from_numpy(A.indices).long(),
                                 torch.from_numpy(A.data), size=A.shape).cuda()
    C = host(At @ torch.from_numpy(B).cuda())
    close(check, "torch CSR @ dense", C, A.astype(np.float64) @ B.astype(np.float64), 1e-5)
    return {"nnz": int(A.nnz), "product": sums(C)}


def cupy_sparse(check, cp):
    import cupyx.scipy.sparse
    A = sparse_matrix(9, (1000, 800))
    v = data(11, 800, kind="uniform")
    Ag = cupyx.scipy.sparse.csr_matrix((cp.asarray(A.data), cp.asarray(A.indices), cp.asarray(A.indptr)),
                                       shape=A.shape)
    w = cp.asnumpy(Ag @ cp.asarray(v))
    close(check, "cupyx csr_matrix @ vector", w, A.astype(np.float64) @ v.astype(np.float64), 1e-5)
    return {"nnz": int(A.nnz), "product": sums(w)}


# ----------------------------------------------------------------- cuSOLVER
def spd(seed, n):
    m = data(seed, (n, n), np.float64)
    return m @ m.T + n * np.eye(n)


def on_gpu(torch, *arrays):
    return [torch.from_numpy(a).cuda() for a in arrays]


def torch_solve_cholesky(check, torch):
    n = 64
    A, b = data(12, (n, n), np.float64) + n * np.eye(n), data(13, (n, 3), np.float64)
    x = host(torch.linalg.solve(*on_gpu(torch, A, b)))
    close(check, "torch.linalg.solve", x, np.linalg.solve(A, b), 1e-10)
    P = spd(16, n)
    L = host(torch.linalg.cholesky(*on_gpu(torch, P)))
    close(check, "torch.linalg.cholesky", L, np.linalg.cholesky(P), 1e-10)
    return {"linalg_library": str(torch.backends.cuda.preferred_linalg_library()),
            "solve": sums(x), "cholesky": sums(L)}


def torch_eigh_svd(check, torch):
    S = data(14, (64, 64), np.float64)
    S = S + S.T
    w, V = (host(t) for t in torch.linalg.eigh(*on_gpu(torch, S)))
    close(check, "torch.linalg.eigh values", w, np.linalg.eigvalsh(S), 1e-10)
    close(check, "torch.linalg.eigh V diag(w) V^T", (V * w) @ V.T, S, 1e-10)
    M = data(15, (96, 64), np.float64)
    U, s, Vh = (host(t) for t in torch.linalg.svd(*on_gpu(torch, M), full_matrices=False))
    close(check, "torch.linalg.svd values", s, np.linalg.svd(M, compute_uv=False), 1e-10)
    close(check, "torch.linalg.svd U diag(s) Vh", (U * s) @ Vh, M, 1e-10)
    # Eigen and singular vectors are unique only up to sign: their abs-sums.
    return {"eigh_values": sums(w), "eigh_vectors_abs_sum": fhex(np.abs(V).sum()),
            "svd_values": sums(s), "svd_u_abs_sum": fhex(np.abs(U).sum()),
            "svd_vh_abs_sum": fhex(np.abs(Vh).sum())}


def cupy_solver(check, cp):
    n = 64
    A, b = data(17, (n, n), np.float64) + n * np.eye(n), data(18, (n, 3), np.float64)
    x = cp.asnumpy(cp.linalg.solve(cp.asarray(A), cp.asarray(b)))
    close(check, "cupy.linalg.solve", x, np.linalg.solve(A, b), 1e-10)
    return {"solve": sums(x)}


# --------------------------------------------------------------------- NCCL
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collectives(torch, dist):
    """all_reduce (in place), all_gather_into_tensor (into zeros: only NCCL
    fills it) and broadcast over the one rank; the results on the host."""
    x = torch.from_numpy(data(19, 4096)).cuda()
    reduced, gathered, cast = x.clone(), torch.zeros_like(x), x * 2
    dist.all_reduce(reduced)  # sum over one rank: x itself
    dist.all_gather_into_tensor(gathered, x)
    dist.broadcast(cast, src=0)
    torch.cuda.synchronize()
    return [host(t) for t in (x, reduced, gathered, cast)]


def nccl_one_rank(check, torch):
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")  # bootstrap on loopback only
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0),
                            timeout=datetime.timedelta(seconds=60))
    try:
        backend = str(dist.get_backend())
        x, reduced, gathered, cast = collectives(torch, dist)
    finally:
        dist.destroy_process_group()
    check(backend == "nccl", f"backend {backend} is nccl")
    check(np.array_equal(reduced, x), "all_reduce over one rank returns the tensor")
    check(np.array_equal(gathered, x), "all_gather over one rank copies the tensor")
    check(np.array_equal(cast, 2 * x), "broadcast from rank 0 keeps the tensor")
    version = torch.cuda.nccl.version()
    return {"backend": backend, "nccl_version": list(version) if isinstance(version, tuple) else version,
            "all_reduce": sums(reduced), "all_gather": sums(gathered), "broadcast": sums(cast)}


# -------------------------------------------------------------------- cuDNN
def conv_grads(torch, x, w, b, up):
    """conv2d forward, then backward of sum(out * up): out and the gradients."""
    x, w, b = (t.detach().clone().requires_grad_() for t in (x, w, b))
    out = torch.nn.functional.conv2d(x, w, b, padding=1)
    (out * up).sum().backward()
    return [host(t) for t in (out, x.grad, w.grad, b.grad)]


def cudnn_conv(check, torch):
    # True fp32 (torch allows TF32 in cuDNN by default). The legacy flag: with
    # torch 2.11, setting only cudnn.conv.fp32_precision makes a later read
    # of cudnn.allow_tf32 raise (a "mix of the legacy and new APIs").
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    x, w, b, up = (torch.from_numpy(data(20 + i, s)) for i, s in
                   enumerate([(8, 3, 32, 32), (16, 3, 3, 3), (16,), (8, 16, 32, 32)]))
    got = conv_grads(torch, *(t.cuda() for t in (x, w, b, up)))
    want = conv_grads(torch, *(t.double() for t in (x, w, b, up)))
    names = ["output", "grad_input", "grad_weight", "grad_bias"]
    for name, g, r in zip(names, got, want):
        close(check, f"cuDNN conv2d {name}", g, r, 1e-5)
    out = {name: sums(g) for name, g in zip(names, got)}
    out["cudnn_version"] = torch.backends.cudnn.version()
    return out


# --------------------------------------------------------------------- main
def run(check):
    torch = common.setup(warn_only=True)
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001 - the cupy sections record it
        print(f"{NAME}: cupy does not import: {e}", file=sys.stderr)
        cp = None
    sections = [
        ("torch_fft", torch_fft, torch), ("torch_stft", torch_stft, torch),
        ("torchaudio_mel", torchaudio_mel, torch), ("cupy_fft", cupy_fft, cp),
        ("torch_rand", torch_rand, torch), ("cupy_rand", cupy_rand, cp),
        ("torch_sparse", torch_sparse, torch), ("cupy_sparse", cupy_sparse, cp),
        ("torch_solve_cholesky", torch_solve_cholesky, torch),
        ("torch_eigh_svd", torch_eigh_svd, torch), ("cupy_solver", cupy_solver, cp),
        ("nccl", nccl_one_rank, torch), ("cudnn_conv", cudnn_conv, torch),
    ]
    out = {}
    with common.nondeterministic_ops() as nd:
        for name, fn, lib in sections:
            if lib is None:
                check(False, f"{name}: cupy does not import")
                out[name] = {"error": "cupy does not import"}
                continue
            out[name] = common.section(check, name, fn, lib)
        torch.cuda.synchronize()
    out["nondeterministic_ops"] = sorted(nd)
    return out


if __name__ == "__main__":
    common.main(NAME, run)

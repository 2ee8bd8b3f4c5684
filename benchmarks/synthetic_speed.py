"""Speed of the synthetic data generators (images per second), not a test.

python benchmarks/synthetic_speed.py --n 20000 --image-size 32 --threads 2
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--image-size", type=int, nargs="+", default=[32])
    p.add_argument("--threads", type=int, default=2, help="BLAS / OpenMP threads")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    from fedpl_core.data.synthetic import make_cxr, make_skin

    make_cxr(200, seed=0)  # warm-up (imports, caches)
    print("wall time is the best of --repeat runs; cpu time is this process's (all threads)")
    print(f"{'generator':<12}{'size':>6}{'n':>8}{'wall s':>9}{'cpu s':>9}{'images/s':>10}{'images/cpu-s':>14}")
    for s in a.image_size:
        n = a.n if s <= 64 else max(200, a.n * 32 * 32 // (s * s))
        for name, fn in (("make_cxr", make_cxr), ("make_skin", make_skin)):
            times = []
            for r in range(a.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                fn(n, image_size=s, seed=r)
                times.append((time.perf_counter() - t0, time.process_time() - c0))
            wall, cpu = min(times)
            print(f"{name:<12}{s:>6}{n:>8}{wall:>9.2f}{cpu:>9.2f}{n / wall:>10.0f}{n / cpu:>14.0f}")


if __name__ == "__main__":
    main()

"""The Flower app: a ServerApp holding a fedpl Server, a ClientApp over one site's data.

Both sides build the same experiment from the run config (synthetic chest X-rays, a
missing-classes partition, the small CNN; everything seeded).  The server keeps the
global model and runs the method's ``payload`` / ``aggregate`` (:class:`FedplStrategy`);
site ``partition-id`` keeps only its own images and labels and runs the method's client
hooks.  A real hospital would build its site from its own files instead
(``FlowerSite.from_dataset``, see the README).
"""

from __future__ import annotations

from logging import INFO

from flwr.app import Context, MetricRecord
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from fedpl_core.apps.flower import FedplStrategy, FlowerSite, make_client_app
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig


def experiment(run_config) -> ExperimentConfig:
    """The run config of pyproject.toml as a fedpl experiment."""
    c = dict(run_config)
    method = str(c.get("method", "fedavg"))
    kw = {"warmup_epochs": float(c.get("warmup-epochs", 1.0))} if method == "surgical" else {}
    part = {} if int(c.get("missing", -1)) < 0 else {"missing": int(c["missing"])}
    engine = EngineConfig(
        rounds=int(c.get("num-server-rounds", 3)),
        local_epochs=float(c.get("local-epochs", 1.0)),
        batch_size=int(c.get("batch-size", 32)),
        lr=float(c.get("lr", 1e-3)),
        device="cpu",
        selection=None,
        progress=False,
    )
    return ExperimentConfig(
        name="flower",
        dataset="synthetic-cxr",
        image_size=int(c.get("image-size", 32)),
        n_train=int(c.get("n-train", 2000)),
        n_test=int(c.get("n-test", 500)),
        data_seed=int(c.get("data-seed", 0)),
        partition="missing_classes",
        num_clients=int(c.get("num-clients", 4)),
        partition_kwargs=part,
        model="cnn",
        method=method,
        method_kwargs=kw,
        engine=engine,
        seed=int(c.get("seed", 0)),
    )


# ---------------------------------------------------------------------------- sites
def site(context: Context) -> FlowerSite:
    cfg = experiment(context.run_config)
    k = int(context.node_config["partition-id"])
    n = int(context.node_config.get("num-partitions", cfg.num_clients))
    if n != cfg.num_clients:
        raise ValueError(f"{n} SuperNodes for num-clients={cfg.num_clients}; set num-supernodes to num-clients")
    return FlowerSite.from_simulation(build_simulation(cfg), k)


client_app = make_client_app(site)

# ---------------------------------------------------------------------------- server
server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = experiment(context.run_config)
    sim = build_simulation(cfg)  # the server uses its global model and the test set only
    strategy = FedplStrategy(sim.server, sim.cfg)

    def evaluate(server_round: int, arrays) -> MetricRecord | None:
        if sim.method.evaluation != "global" or sim.test_set is None:
            return None  # personalised models live on the sites
        m = sim.evaluate(sim.test_set)
        return MetricRecord({k: float(m[k]) for k in ("auroc_mean", "map") if m.get(k) is not None})

    result = strategy.start(grid, strategy.global_arrays(), num_rounds=cfg.engine.rounds, evaluate_fn=evaluate)
    last = result.evaluate_metrics_serverapp.get(cfg.engine.rounds)
    log(INFO, "fedpl %s, %d clients, %d rounds: test %s", cfg.method, cfg.num_clients, cfg.engine.rounds, last)

"""Any fedpl method as a Flower app (Flower 1.40 message API): a ``Strategy`` on the
server, a ``ClientApp`` on the sites.

The method classes are used unchanged; Flower only carries what the in-process engine
passes between the two sides of a :class:`~fedpl_core.methods.base.Method`:

* **Server** (:class:`FedplStrategy`, a ``flwr.serverapp.strategy.Strategy``): it holds a
  fedpl :class:`~fedpl_core.fl.server.Server` (the global arrays and the method's server
  memory).  ``configure_train`` samples clients exactly as the simulation does
  (:func:`~fedpl_core.fl.server.sample_clients`: ``client_fraction``, seeded per round)
  and sends each one its own
  ``method.payload(server, k)`` (personalised payloads go to each node separately);
  ``aggregate_train`` turns the replies into :class:`~fedpl_core.fl.federation.ClientUpdate`
  objects, in client order, and calls ``method.aggregate``.
* **Sites** (:func:`make_client_app` over a :class:`FlowerSite`): a
  :class:`~fedpl_core.fl.site.Site` with its own images and labels (a
  :class:`~fedpl_core.fl.federation.ClientData`) and its own working model and
  optimizer.  A ``train`` message runs the simulation's own client round on it
  (:meth:`Site.train <fedpl_core.fl.site.Site.train>`: optimizer reset / keep,
  ``receive``, ``local_train``, ``make_update``; the hooks of
  :mod:`fedpl_core.methods.base`).
  The per-client state (``ctx.state``: local arrays, teachers,
  Surgical Aggregation's class order, optimizer state) lives in Flower's
  ``context.state`` between rounds, so it survives a restarted ClientApp process.

What travels (:func:`encode` / :func:`decode`): a payload, the declared metadata and
``ctx.state`` are nested containers of tensors and plain values.  Every tensor becomes an
entry of an ``ArrayRecord`` (``<name>.arrays``), every int / float / str / bool (or a
list of one such type) an entry of a ``ConfigRecord`` (``<name>.config``), keyed by its
path (``state/encoder.0.weight``, ``head_classes``); the container structure (dicts with
str or int keys, lists, tuples, None) is a JSON string in the ConfigRecord.  A client's
model arrays travel in the ``ArrayRecord`` ``"arrays"`` (Flower's usual key), its sample
count and client id in the ``ConfigRecord`` ``"fedpl"``, its loss in the ``MetricRecord``
``"metrics"``.

**Client identity.**  A site's fedpl client id is the ``partition-id`` of its node config:
the simulation runtime numbers its virtual SuperNodes 0..N-1; in a deployment the
operator gives it to each SuperNode (``flower-supernode --node-config "partition-id=3"``).
Flower's node ids are random and change when a SuperNode restarts, so before its first
round (and whenever a mapped node has gone) the strategy sends every connected node a
``query`` message and keeps the map ``{client id: node id}`` that the replies declare.
Two nodes claiming one id, an id outside ``0..K-1``, or a client name that differs from
the server's :class:`~fedpl_core.fl.federation.FederationInfo` stop the run with an error.

Equal to the engine: with the same seeds, rounds through this adapter give the engine's
global weights to float tolerance (``tests/test_flower.py``).  Not carried over: the
engine's per-round evaluation, model selection and checkpoints (use the ServerApp's
``evaluate_fn``), and pooled baselines (``federated = False``: Centralized, Oracle,
Local), which have no federated form.

:class:`LocalGrid` runs the real strategy loop and the real ClientApp in one process with
every message serialised to protobuf and back, as on the wire (for tests and debugging;
``flwr run`` is the runtime).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from ..data.base import ImageDataset
from ..fl.engine_config import EngineConfig
from ..fl.evaluation import client_logs
from ..fl.federation import ClientData, ClientUpdate, FederationInfo, derive_seed
from ..fl.server import Server, sample_clients
from ..fl.simulation import Simulation
from ..fl.site import Site, WorkingModel, make_client_data, place_model, resolve_device, split_validation
from ..methods.base import Method
from ..partitions import ClientSpec, Partition

SCHEMA_KEY = "__schema__"
ARRAYS = "arrays"  # the client's model arrays (Flower's usual key)
FEDPL = "fedpl"  # client id, round, sample count
METRICS = "metrics"
PAYLOAD, METADATA, STATE = "fedpl.payload", "fedpl.metadata", "fedpl.state"

_CONFIG_SCALARS = (bool, int, float, str, bytes)


# ============================================================================ the codec
def _to_array(t: torch.Tensor | np.ndarray) -> Array:
    a = t.detach().cpu().contiguous().numpy() if isinstance(t, torch.Tensor) else np.ascontiguousarray(t)
    if a.dtype == object:
        raise TypeError("object arrays cannot be sent")
    return Array.from_numpy_ndarray(a)


def _from_array(a: Array) -> np.ndarray:
    return np.array(a.numpy(), copy=True)  # np.load over bytes is read-only


def _encode(obj: Any, path: str, arrays: dict[str, Array], config: dict[str, Any]) -> Any:
    def claim(store: dict) -> str:
        if path in arrays or path in config or path == SCHEMA_KEY:
            raise ValueError(f"two values would travel under the key {path!r} (a dict key holding '/'?)")
        return path

    if isinstance(obj, torch.Tensor):
        if obj.dtype == torch.bfloat16:
            raise TypeError(f"{path}: bfloat16 tensors cannot be sent; cast to float32 first")
        arrays[claim(arrays)] = _to_array(obj)
        return {"t": "tensor", "k": path}
    if isinstance(obj, np.ndarray):
        arrays[claim(arrays)] = _to_array(obj)
        return {"t": "ndarray", "k": path}
    if obj is None:
        return {"t": "none"}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, _CONFIG_SCALARS):
        config[claim(config)] = obj
        return {"t": "cfg", "k": path}
    if isinstance(obj, (list, tuple)):
        seq = "tuple" if isinstance(obj, tuple) else "list"
        if all(type(v) in _CONFIG_SCALARS for v in obj) and len({type(v) for v in obj}) <= 1:
            config[claim(config)] = list(obj)
            return {"t": "cfg", "k": path, "seq": seq}
        return {
            "t": seq,
            "items": [_encode(v, f"{path}/{i}" if path else str(i), arrays, config) for i, v in enumerate(obj)],
        }
    if isinstance(obj, Mapping):
        items = []
        for k, v in obj.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"{path or 'the root'}: dict key {k!r} is not a str or an int")
            items.append([k, _encode(v, f"{path}/{k}" if path else str(k), arrays, config)])
        return {"t": "dict", "items": items}
    raise TypeError(
        f"{path or 'the root'}: a {type(obj).__name__} cannot travel in Flower records "
        "(tensors, arrays, numbers, strings, bools, None, and dicts / lists / tuples of them)"
    )


def _decode(node: Any, arrays: ArrayRecord, config: ConfigRecord) -> Any:
    t = node["t"]
    if t == "tensor":
        return torch.from_numpy(_from_array(arrays[node["k"]]))
    if t == "ndarray":
        return _from_array(arrays[node["k"]])
    if t == "none":
        return None
    if t == "cfg":
        v = config[node["k"]]
        if "seq" in node:
            return tuple(v) if node["seq"] == "tuple" else list(v)
        return v
    if t in ("list", "tuple"):
        out = [_decode(n, arrays, config) for n in node["items"]]
        return tuple(out) if t == "tuple" else out
    if t == "dict":
        return {k: _decode(n, arrays, config) for k, n in node["items"]}
    raise ValueError(f"unknown record schema node {t!r}")


def encode(obj: Mapping[str, Any], name: str, into: RecordDict | None = None) -> RecordDict:
    """Put the dict ``obj`` into ``into`` (a new RecordDict by default) as the records
    ``<name>.arrays`` (every tensor / ndarray) and ``<name>.config`` (every plain value,
    and the structure); :func:`decode` gives it back."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"encode: expected a dict, got {type(obj).__name__}")
    arrays: dict[str, Array] = {}
    config: dict[str, Any] = {}
    schema = _encode(obj, "", arrays, config)
    config[SCHEMA_KEY] = json.dumps(schema)
    rd = RecordDict() if into is None else into
    rd[f"{name}.arrays"] = ArrayRecord(arrays) if arrays else ArrayRecord()
    rd[f"{name}.config"] = ConfigRecord(config)
    return rd


def decode(rd: RecordDict, name: str) -> dict[str, Any]:
    """The dict :func:`encode` put under ``name`` (tensors back as CPU torch tensors)."""
    try:
        config = rd[f"{name}.config"]
        arrays = rd[f"{name}.arrays"]
    except KeyError:
        raise KeyError(f"the records {name}.config / {name}.arrays are missing") from None
    return _decode(json.loads(config[SCHEMA_KEY]), arrays, config)


def state_to_record(state: Mapping[str, torch.Tensor]) -> ArrayRecord:
    """Model arrays -> an ArrayRecord (keys kept)."""
    return ArrayRecord({k: _to_array(v) for k, v in state.items()})


def record_to_state(rec: ArrayRecord) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(_from_array(rec[k])) for k in rec}


# ============================================================================ the site
class FlowerSite(Site):
    """A :class:`~fedpl_core.fl.site.Site` (a hospital) with its own working model: its
    data, a model, an optimizer and the method's client side; :meth:`Site.train
    <fedpl_core.fl.site.Site.train>` runs the simulation's client round on a payload.

    ``method`` is the method's object on this site (``setup`` is called here), ``model``
    the working model (its initial arrays do not matter: the payload overwrites them),
    ``images`` uint8 ``[n, C, H, W]`` (or an :class:`ImageDataset`) indexed by
    ``data.indices``, ``data`` the site's labels and known-label mask, ``info`` the
    federation's :class:`FederationInfo` (the same on every party), ``cfg`` the engine
    schedule (local epochs, batch size, optimizer, seed, ...), ``client_id`` the site's
    fedpl client id.  Its training loss is checked for non-finite values only (the
    simulation's relative check needs the global model's starting loss).
    """

    def __init__(
        self,
        method: Method,
        model: torch.nn.Module,
        images: np.ndarray | torch.Tensor | ImageDataset,
        data: ClientData,
        info: FederationInfo,
        cfg: EngineConfig,
        client_id: int,
    ):
        if not method.federated:
            raise ValueError(f"method {method.name!r} pools the clients' data; it has no federated form")
        if not 0 <= client_id < info.num_clients:
            raise ValueError(f"client id {client_id} is outside 0..{info.num_clients - 1}")
        if isinstance(images, ImageDataset):
            images = images.images
        device = resolve_device(cfg.device)
        model = place_model(model, cfg, device)
        images = torch.as_tensor(np.ascontiguousarray(images)) if not isinstance(images, torch.Tensor) else images
        if data.n and int(data.indices.max()) >= len(images):
            raise ValueError(
                f"site {client_id}: data indices reach {int(data.indices.max())}, "
                f"but the site holds {len(images)} images"
            )
        method.setup(model, info)
        super().__init__(client_id, data, method, WorkingModel(model, cfg, device), images, info, cfg)

    # ---------------------------------------------------------- constructors
    @classmethod
    def from_dataset(
        cls,
        method: Method,
        model: torch.nn.Module,
        dataset: ImageDataset,
        annotated: Sequence[str],
        info: FederationInfo,
        cfg: EngineConfig,
        client_id: int,
    ) -> FlowerSite:
        """A site over its own :class:`ImageDataset` (columns: the federation's classes)
        that annotates the classes ``annotated``: labels of every other class are unknown
        (and zeroed), as in the engine's partitions."""
        if list(dataset.class_names) != list(info.class_names):
            raise ValueError(
                f"the site's classes {dataset.class_names} differ from the federation's {info.class_names}"
            )
        unknown = set(annotated) - set(info.class_names)
        if unknown:
            raise ValueError(f"unknown class(es) {sorted(unknown)}")
        mask = np.array([c in set(annotated) for c in info.class_names])
        part = Partition(
            [ClientSpec(np.arange(len(dataset)), mask, info.client_names[client_id])], list(info.class_names)
        )
        data = make_client_data(dataset, part)[0]
        if cfg.client_val_fraction > 0:
            data = split_validation(data, cfg.client_val_fraction, derive_seed(cfg.seed, client_id, 104729))
        return cls(method, model, dataset, data, info, cfg, client_id)

    @classmethod
    def from_simulation(cls, sim: Simulation, client_id: int) -> FlowerSite:
        """Client ``client_id`` of an engine simulation as a site: its data (validation
        split included) with only its own images, the simulation's model and method."""
        d = sim.clients[client_id]
        idx = d.indices if d.val is None else torch.cat([d.indices, d.val.indices])
        remap = torch.arange(len(idx))
        val = None
        if d.val is not None:
            v = d.val
            val = ClientData(remap[d.n :], v.labels, v.mask, v.class_mask, v.name)
        data = ClientData(remap[: d.n], d.labels, d.mask, d.class_mask, d.name, val=val)
        images = sim.images.cpu()[idx]
        return cls(sim.method, sim.model, images, data, sim.info, sim.cfg, client_id)


def make_client_app(site_fn: Callable[[Context], FlowerSite]) -> ClientApp:
    """A ``ClientApp`` whose ``train`` runs the method's client round on
    ``site_fn(context)`` (built once per run and node in a ClientApp process) and whose
    ``query`` tells the server this site's client id and name.  ``ctx.state`` lives in
    ``context.state`` (records ``fedpl.state.*``) between rounds."""
    app = ClientApp()
    sites: dict[tuple[int, int], FlowerSite] = {}

    def site_of(context: Context) -> FlowerSite:
        key = (context.run_id, context.node_id)
        if key not in sites:
            sites[key] = site_fn(context)
        return sites[key]

    @app.query()
    def hello(msg: Message, context: Context) -> Message:
        site = site_of(context)
        return Message(
            RecordDict(
                {
                    FEDPL: ConfigRecord(
                        {"client-id": site.client_id, "client-name": site.data.name, "num-samples": site.data.n}
                    )
                }
            ),
            reply_to=msg,
        )

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        site = site_of(context)
        cfg = msg.content[FEDPL]
        k, round_idx = int(cfg["client-id"]), int(cfg["round"])
        if k != site.client_id:
            raise RuntimeError(
                f"node {context.node_id} holds client {site.client_id} but was sent client {k}'s payload"
            )
        payload = decode(msg.content, PAYLOAD)
        site.state = decode(context.state, STATE) if f"{STATE}.config" in context.state else {}
        update, logs = site.train(payload, round_idx)
        encode(site.state, STATE, into=context.state)
        out = RecordDict(
            {
                ARRAYS: state_to_record(update.state),
                FEDPL: ConfigRecord({"client-id": update.client_id, "num-samples": int(update.num_samples)}),
                METRICS: MetricRecord(
                    {**{n: float(v) for n, v in logs.items()}, "num-examples": int(update.num_samples)}
                ),
            }
        )
        encode(update.metadata, METADATA, into=out)
        return Message(out, reply_to=msg)

    return app


# ============================================================================ the server
class FedplStrategy(Strategy):
    """A Flower strategy that is a fedpl :class:`Server`: ``configure_train`` sends each
    sampled client ``method.payload(server, k)``, ``aggregate_train`` calls
    ``method.aggregate(server, updates)``.

    ``server``: the fedpl server (its ``global_state`` is the global model; its ``info``
    names the K clients); ``cfg``: the engine schedule (``client_fraction`` and ``seed``
    choose the clients of each round as the engine does); ``wait_s``: how long to wait
    for all K sites to connect before the first round.  ``history``: one record per round
    (``round``, ``train_loss``, ``train_time``, the clients' mean logs).
    """

    def __init__(self, server: Server, cfg: EngineConfig, wait_s: float = 600.0, poll_s: float = 1.0):
        self.server, self.cfg = server, cfg
        self.wait_s, self.poll_s = float(wait_s), float(poll_s)
        self.node_of: dict[int, int] = {}  # fedpl client id -> Flower node id
        self.round = 0  # fedpl rounds done (the engine's Simulation.round)
        self.history: list[dict[str, Any]] = []
        self._sent: dict[int, int] = {}  # node id -> client id of this round's messages
        self._t0 = 0.0

    @property
    def method(self) -> Method:
        return self.server.method

    @property
    def global_state(self) -> dict[str, torch.Tensor]:
        return self.server.global_state

    def global_arrays(self) -> ArrayRecord:
        return state_to_record(self.server.global_state)

    def summary(self) -> None:
        from logging import INFO

        from flwr.common.logger import log

        log(INFO, "\t├── fedpl method: %s (%s)", self.method.name, type(self.method).__name__)
        log(INFO, "\t├── clients: %d (%s)", self.server.info.num_clients, ", ".join(self.server.info.client_names))
        log(INFO, "\t└── client fraction: %g, seed: %d", self.cfg.client_fraction, self.cfg.seed)

    # --------------------------------------------------------- client identity
    def register(self, grid: Grid) -> dict[int, int]:
        """Ask every connected node for its client id (waiting up to ``wait_s`` for all
        K); returns and keeps ``{client id: node id}``."""
        K = self.server.info.num_clients
        deadline = time.monotonic() + self.wait_s
        while len(nodes := list(grid.get_node_ids())) < K and time.monotonic() < deadline:
            time.sleep(self.poll_s)
        msgs = [
            Message(RecordDict({FEDPL: ConfigRecord({"hello": True})}), dst_node_id=n, message_type=MessageType.QUERY)
            for n in nodes
        ]
        replies = list(grid.send_and_receive(msgs, timeout=self.wait_s))
        mapping: dict[int, int] = {}
        names = self.server.info.client_names
        for r in replies:
            node = r.metadata.src_node_id
            if r.has_error():
                raise RuntimeError(f"node {node} failed to say which client it is: {r.error.reason}")
            c = r.content[FEDPL]
            k = int(c["client-id"])
            if not 0 <= k < K:
                raise RuntimeError(f"node {node} claims client id {k}, outside 0..{K - 1}")
            if k in mapping:
                raise RuntimeError(f"nodes {mapping[k]} and {node} both claim client id {k}")
            if str(c["client-name"]) != names[k]:
                raise RuntimeError(
                    f"node {node} is client {k} named {c['client-name']!r}; the server expects {names[k]!r}"
                )
            mapping[k] = node
        missing = sorted(set(range(K)) - set(mapping))
        if missing:
            raise RuntimeError(f"no node answered for client(s) {missing} ({len(nodes)} node(s) connected)")
        self.node_of = mapping
        return mapping

    def sample_clients(self, round_idx: int) -> list[int]:
        """The simulation's sampling (:func:`~fedpl_core.fl.server.sample_clients`), same seeds."""
        return sample_clients(self.server.info.num_clients, self.cfg.client_fraction, self.cfg.seed, round_idx)

    # ------------------------------------------------------------------ train
    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        self._t0 = time.perf_counter()
        clients = self.sample_clients(self.round)
        live = set(grid.get_node_ids())
        if not self.node_of or any(self.node_of.get(k) not in live for k in clients):
            self.register(grid)
        messages, self._sent = [], {}
        for k in clients:
            rd = encode(self.server.payload(k), PAYLOAD)
            rd[FEDPL] = ConfigRecord({"client-id": k, "round": self.round, "server-round": server_round})
            node = self.node_of[k]
            self._sent[node] = k
            messages.append(Message(rd, dst_node_id=node, message_type=MessageType.TRAIN, group_id=str(server_round)))
        return messages

    def updates_from(self, replies: Iterable[Message]) -> tuple[list[ClientUpdate], list[float], list[dict]]:
        """Replies -> ClientUpdates in client-id order (the engine's order)."""
        got = []
        for r in replies:
            node = r.metadata.src_node_id
            if node not in self._sent:
                raise RuntimeError(f"a reply from node {node}, which was sent nothing this round")
            k = self._sent[node]
            if r.has_error():
                raise RuntimeError(
                    f"client {k} ({self.server.info.client_names[k]}, node {node}) failed: {r.error.reason}"
                )
            c = r.content[FEDPL]
            if int(c["client-id"]) != k:
                raise RuntimeError(f"node {node} answered as client {c['client-id']}, expected {k}")
            m = r.content[METRICS]
            upd = ClientUpdate(
                k, record_to_state(r.content[ARRAYS]), int(c["num-samples"]), decode(r.content, METADATA)
            )
            logs = {n: float(v) for n, v in m.items() if n.startswith("log/")}
            got.append((k, upd, float(m["train_loss"]), logs))
        missing = sorted(set(self._sent.values()) - {g[0] for g in got})
        if missing:
            raise RuntimeError(f"no reply from client(s) {missing} this round")
        got.sort(key=lambda g: g[0])
        return [g[1] for g in got], [g[2] for g in got], [g[3] for g in got]

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        updates, losses, logs = self.updates_from(replies)
        self.server.aggregate(updates)
        self.round += 1
        loss = float(np.mean(losses))
        if not math.isfinite(loss):
            raise RuntimeError(f"round {self.round}: the training loss is {loss}")
        record: dict[str, Any] = {"round": self.round, "train_loss": loss, "train_time": time.perf_counter() - self._t0}
        record.update(client_logs(logs))
        self.history.append(record)
        return self.global_arrays(), MetricRecord(
            {k: float(v) for k, v in record.items() if isinstance(v, (int, float))}
        )

    # --------------------------------------------- evaluation: central only
    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        return []

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return None


# ============================================================================ in one process
class LocalGrid(Grid):
    """A Flower ``Grid`` that delivers messages to a ``ClientApp`` in this process: every
    message and every node's context goes through protobuf and back, as between real
    processes.  ``node_configs``: one node config per node (``{"partition-id": k, ...}``);
    node ids are drawn at random (``seed``), unrelated to the partition ids."""

    def __init__(
        self,
        client_app: ClientApp,
        node_configs: Sequence[Mapping[str, Any]],
        run_id: int = 1,
        run_config: Mapping[str, Any] | None = None,
        seed: int = 0,
    ):
        from flwr.common.serde import context_from_proto, context_to_proto, message_from_proto, message_to_proto

        self._to_msg, self._from_msg = message_to_proto, message_from_proto
        self._to_ctx, self._from_ctx = context_to_proto, context_from_proto
        from flwr.common.constant import SUPERLINK_NODE_ID
        from flwr.supercore.task_identity import TaskIdentity

        # what the ServerApp runtime sets before a ServerApp runs (Message() reads it)
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID
        self.app = client_app
        rng = np.random.default_rng(seed)
        ids = (rng.choice(2**62, size=len(node_configs), replace=False) + 2).tolist()
        self.contexts = {
            int(n): context_to_proto(Context(run_id, int(n), dict(nc), RecordDict(), dict(run_config or {})))
            for n, nc in zip(ids, node_configs)
        }
        self._run = None
        self._counter = 0

    def set_run(self, run) -> None:
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        raise NotImplementedError("LocalGrid answers in send_and_receive")

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        raise NotImplementedError("LocalGrid answers in send_and_receive")

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        from flwr.app import Error

        replies = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            self._counter += 1
            msg.metadata.__dict__["_message_id"] = f"m{self._counter}"
            wire = self._from_msg(self._to_msg(msg))
            ctx = self._from_ctx(self.contexts[node])
            try:
                reply = self.app(wire, ctx)
            except Exception as e:  # the runtime turns a ClientApp exception into an error reply
                reply = Message(Error(code=0, reason=f"{type(e).__name__}: {e}"), reply_to=wire)
            self.contexts[node] = self._to_ctx(ctx)
            replies.append(self._from_msg(self._to_msg(reply)))
        return replies


__all__ = [
    "FlowerSite",
    "FedplStrategy",
    "LocalGrid",
    "make_client_app",
    "encode",
    "decode",
    "state_to_record",
    "record_to_state",
]

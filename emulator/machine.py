"""emulator.Machine: one machine of the public API -- the reference machine
(emulator/reference.py) on an execution backend (emulator/backends.py).

    m = Machine(config, backend="reference" | "cpu" | "gpu" | "auto")

On `reference` (the default) every block runs on the reference itself, block by block.  On any
other backend the machine's streams run on the batched engine's one-machine paths
(emulator/engine.py, one_machine): on `cpu` the reference's own block steps on this machine's
state with the engine's speed caches (covered element-wise blocks as compiled block programs,
emulator/blockprog.py), on `gpu` a one-machine batch holding the tiles on the
device for the length of a stream.  Results, errors and states are the reference's, always
(tests/emulator/test_machine_backend.py).

Why the public Machine lives here and not in reference.py: dependencies point one way
(reference <- engine <- machine <- batch).  The reference knows nothing of the engine (it is the
oracle the engine is proven against), so the class that chooses between them is above both.
"""
from __future__ import annotations

from . import engine
from .backends import resolve_backend
from .config import MachineConfig, with_profile  # noqa: F401  (with_profile re-exported)
from .reference import (GPR_MASK, BlockResult, ReferenceMachine, RunResult, Staged, StreamError,  # noqa: F401
                        TileView, one_block, stream_items)  # (re-exported)
from .state import TILE_ID_LIMIT, MachineState, PEState, used_bytes, validate_tile  # noqa: F401  (re-exported)


class Machine(ReferenceMachine):
    """A machine (ReferenceMachine's state and API) whose blocks run on `backend`; `m.backend`
    and `m.why` say what was chosen and why.  An unknown backend, or `gpu` without a usable GPU,
    is one BackendError line here."""

    def __init__(self, config: MachineConfig | None = None, backend: str = "reference"):
        super().__init__(config)
        self.backend, xp, self.why = resolve_backend(backend)
        self._engine = engine.one_machine(self.backend, xp, self.why)     # None: the reference itself

    def __getstate__(self):
        """Pickled without the engine: its speed caches are left out (isa/memo.py's policy) and
        rebuilt for the backend when loaded."""
        state = self.__dict__.copy()
        del state["_engine"]
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._engine = engine.one_machine(*resolve_backend(self.backend))

    def _runner(self):
        return super()._runner() if self._engine is None else self._engine.runner(self)

    def run(self, stream, log=None) -> RunResult:
        # a stream known whole before it runs (bytes, a list or tuple of Blocks) may run covered
        # blocks as chains on cpu (emulator/blockprog.py): nothing outside the run can look at
        # the state between its blocks, as a generator of Blocks could
        self._whole_stream = isinstance(stream, (bytes, bytearray, memoryview, list, tuple))
        try:
            return super().run(stream, log)
        finally:
            self._whole_stream = False
    run.__doc__ = ReferenceMachine.run.__doc__

    def execute(self, block) -> BlockResult:
        if self._engine is None:
            return self._execute(block)[0]
        return self._engine.execute(self, block)

    def adopt(self, state: MachineState) -> None:
        super().adopt(state)
        if self._engine is not None:
            self._engine.forget()

    def copy(self, backend: str | None = None) -> "Machine":
        """An independent machine with this state (tiles are immutable, so they are shared), on
        this machine's backend or on `backend`."""
        m = Machine(self.config, "reference" if backend is None else backend)
        if backend is None and self._engine is not None:     # this one's backend, as resolved for it
            m.backend, m.why, m._engine = self.backend, self.why, self._engine.fresh()
        m._pes = self.pes_copy()
        m.engines = self.engines
        return m

    @classmethod
    def from_state(cls, state: MachineState, backend: str = "reference") -> "Machine":
        """A machine running on `state` (loaded from a file; not copied)."""
        m = cls(state.config, backend)
        m.adopt(state)
        return m

    @classmethod
    def load(cls, path, config: MachineConfig | None = None, backend: str = "reference",
             profile: str | None = None) -> "Machine":
        """The one machine of a state file (a file of many: MachineBatch.load or load_machines);
        `profile` (a kernels.numeric.profiles name) overrides the file's numeric profile."""
        from .batchio import load_states
        from .stateio import StateFileError
        states = load_states(path, config)
        if len(states) != 1:
            raise StateFileError(f"{path}: holds {len(states)} machines; load it with MachineBatch.load "
                                 f"or emulator.machine.load_machines")
        m = cls.from_state(states[0], backend)
        if profile is not None:
            m.config = with_profile(m.config, profile)
        return m


def load_machines(path, config: MachineConfig | None = None) -> list[Machine]:
    """Every machine of a single- or multi-machine state file, in order."""
    from .batchio import load_states
    return [Machine.from_state(st) for st in load_states(path, config)]

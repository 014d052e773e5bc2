"""Build libtile_emu with cffi's embedding mode (docs/cosim-c.md, "Building the library").

    tile-emu cosim build --out DIR

cffi generates one C file holding a wrapper per function of tile_emu.h; the library links
libpython and, on its first call, starts an interpreter inside the host process, imports this
tile-emu and registers emulator/dpi/capi.py's functions as the implementations.  The wrappers
are C: each starts the interpreter (`cffi_start_python`) and returns TE_ERR_INIT when it cannot
-- cffi alone would return 0, which is TE_OK -- and `te_code_name` needs no Python at all.

The embedded interpreter is the one building the library: its libpython (by RUNPATH), its home
(`sys.base_prefix`: left to itself, an embedded CPython looks for `python3` on the host's PATH
and may take another installation's standard library) and its module search path (a virtual
environment's packages, cffi's backend, this tile-emu), set in a PyConfig before cffi would start
the interpreter.  tile-emu's own folder comes first, then PYTHONPATH, then the rest.  A host that
already runs Python (a cocotb testbench) keeps its interpreter as it is.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import sys
import sysconfig
import tempfile

from isa.atomicio import atomic_path

from . import HEADER, SV_PACKAGE
from . import capi

MODULE = "_tile_emu_cffi"
LIBRARY = "libtile_emu"
INIT_FAILED = ("tile-emu: the embedded Python interpreter could not start or could not import tile-emu "
               "(its traceback is on stderr); rebuild the library with `tile-emu cosim build` in the "
               "environment where tile-emu is installed")


class Unavailable(Exception):
    """A tool the build needs is missing; the message says what to install."""


def missing() -> str | None:
    """What this machine lacks to build the library (one line saying what to install), or None."""
    try:
        import cffi  # noqa: F401
    except ImportError:
        return 'cffi is not installed: pip install -e ".[cosim]" (or ".[rtl]")'
    cc = os.environ.get("CC", "cc").split()[0]
    if not shutil.which(cc):
        return f"no C compiler ({cc}): apt-get install -y gcc"
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        v = f"{sys.version_info.major}.{sys.version_info.minor}"
        return f"the Python headers are missing ({include}/Python.h): apt-get install -y python{v}-dev"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return ("this Python has no shared libpython to embed (built without --enable-shared); use a Python "
                "that has one (Debian's python3, pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared)")
    return None


def _params(text: str) -> list[str]:
    """The parameter names of a C parameter list ('void': none)."""
    text = text.strip()
    if text == "void":
        return []
    return [p.strip().split()[-1].lstrip("*") for p in text.split(",")]


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


BOOT = r"""
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
static pthread_once_t te_once = PTHREAD_ONCE_INIT;
static int te_boot_status = 0;

/* Start the interpreter the library was built with (home and module search path), unless the
   host runs Python already; cffi then finds it initialized.  Never exits the host. */
static void te_boot_once(void) {
    if (Py_IsInitialized()) return;
    const char *env = getenv("PYTHONPATH");
    size_t n = strlen(TE_ROOT) + strlen(TE_PATH) + (env ? strlen(env) : 0) + 3;
    char *path = malloc(n);
    if (!path) { te_boot_status = -1; return; }
    snprintf(path, n, "%s%s%s%s%s", TE_ROOT, env && *env ? TE_SEP : "", env && *env ? env : "", TE_SEP, TE_PATH);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.home, TE_HOME);
    if (!PyStatus_Exception(st)) st = PyConfig_SetBytesString(&config, &config.pythonpath_env, path);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    free(path);
    if (PyStatus_Exception(st)) {
        fprintf(stderr, "tile-emu: the embedded interpreter did not start: %s\n", st.err_msg ? st.err_msg : "?");
        te_boot_status = -1;
        return;
    }
    PyEval_SaveThread();                   /* as cffi does: the GIL is taken per call */
}

static int te_boot(void) {
    pthread_once(&te_once, te_boot_once);
    return te_boot_status;
}
"""


def wrappers() -> str:
    """The C source of the exported functions: the interpreter's start, one wrapper per
    Python-implemented function, te_code_name from the header's codes."""
    root, *rest = _search_path()
    lines = [f'#include "{HEADER.name}"',
             f"static const char TE_HOME[] = {_c_string(sys.base_prefix)};",
             f"static const char TE_ROOT[] = {_c_string(root)};",
             f"static const char TE_PATH[] = {_c_string(os.pathsep.join(rest))};",
             f"static const char TE_SEP[] = {_c_string(os.pathsep)};",
             BOOT,
             "#define TE_START(fail) do { if (te_boot() != 0 || cffi_start_python() != 0) return (fail); } while (0)",
             f"static const char TE_INIT_FAILED[] = {_c_string(INIT_FAILED)};"]
    for ret, name, params in capi.prototypes():
        if name in capi.C_ONLY:
            continue
        py = "te_py_" + name[3:]
        lines.append(f"static {ret} {py}({params});")
        fail = "TE_INIT_FAILED" if name in capi.POINTER_RESULTS else "TE_ERR_INIT"
        args = ", ".join(_params(params))
        lines.append(f"{ret} {name}({params}) {{ TE_START({fail}); return {py}({args}); }}")
    cases = "".join(f'        case {n}: return "{n}";\n' for v, n in sorted(capi.CODE_NAMES.items()))
    lines.append("const char *te_code_name(int code) {\n    switch (code) {\n" + cases +
                 '        default: return "TE_UNKNOWN_CODE";\n    }\n}')
    return "\n".join(lines) + "\n"


def _search_path() -> list[str]:
    """This tile-emu's root, then this interpreter's module search path (what the library keeps)."""
    root = str(pathlib.Path(__file__).resolve().parents[2])
    rest = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    return [root] + [p for p in dict.fromkeys(rest) if p != root]


def init_code() -> str:
    return f"""
from {MODULE} import ffi
from emulator.dpi import capi
capi.install(ffi)
"""


def build(out, verbose: bool = False, cflags: tuple[str, ...] = ()) -> list[pathlib.Path]:
    """Compile the library into folder `out` (created), with tile_emu.h and tile_emu_pkg.sv
    beside it; the three paths.  `cflags` go to the compiler and the linker (the tests build it
    with -fsanitize=address).  Unavailable when a tool is missing."""
    need = missing()
    if need:
        raise Unavailable(need)
    import cffi
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cdef = capi.cdef_text()
    types = capi.PROTOTYPE.sub("", cdef)
    api = "\n".join(f"{ret} te_py_{name[3:]}({params});" for ret, name, params in capi.prototypes()
                    if name not in capi.C_ONLY)
    ffi = cffi.FFI()
    ffi.cdef(types)
    ffi.embedding_api(api)
    ffi.set_source(MODULE, wrappers(), include_dirs=[str(HEADER.parent)], extra_compile_args=list(cflags),
                   extra_link_args=list(cflags) + [f"-Wl,-rpath,{sysconfig.get_config_var('LIBDIR')}"])
    ffi.embedding_init_code(init_code())
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    with tempfile.TemporaryDirectory(dir=out, prefix=".build-") as tmp:
        target = pathlib.Path(tmp) / (LIBRARY + suffix)
        built = ffi.compile(tmpdir=tmp, target=str(target), verbose=verbose)
        made = []
        for src, name in ((built, LIBRARY + suffix), (HEADER, HEADER.name), (SV_PACKAGE, SV_PACKAGE.name)):
            with atomic_path(out / name, devices=False) as staged:    # each file whole or not at all
                shutil.copyfile(src, staged)
                os.chmod(staged, 0o755 if name.startswith(LIBRARY) else 0o644)
            made.append(out / name)
    return made

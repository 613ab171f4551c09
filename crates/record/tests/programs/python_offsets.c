/*
 * Prints, for the CPython whose headers it is compiled against, the offsets kiln's
 * table of layouts holds (kiln_record::python::layout): `name value` lines. Compiled
 * with -I<include> -I<include>/internal by the python test, for every interpreter it
 * checks.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_MINOR_VERSION < 11
#include <frameobject.h>
#endif
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_MINOR_VERSION >= 11
#include "internal/pycore_frame.h"
#endif

#define P(name, value) printf("%s %ld\n", name, (long)(value))

int main(void)
{
	P("major", PY_MAJOR_VERSION);
	P("minor", PY_MINOR_VERSION);
	P("runtime_interp_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_MINOR_VERSION >= 11
	P("interp_threads", offsetof(PyInterpreterState, threads.head));
#else
	P("interp_threads", offsetof(PyInterpreterState, tstate_head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_MINOR_VERSION == 11 || PY_MINOR_VERSION == 12
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_frame", offsetof(_PyCFrame, current_frame));
#elif PY_MINOR_VERSION >= 13
	P("tstate_frame", offsetof(PyThreadState, current_frame));
#else
	P("tstate_frame", offsetof(PyThreadState, frame));
#endif
#if PY_MINOR_VERSION >= 13
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#elif PY_MINOR_VERSION >= 11
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
#endif
#if PY_MINOR_VERSION >= 11
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
	P("code_name", offsetof(PyCodeObject, co_qualname));
	P("code_bytecode", offsetof(PyCodeObject, co_code_adaptive));
#else
	P("frame_previous", offsetof(PyFrameObject, f_back));
	P("code_name", offsetof(PyCodeObject, co_name));
#endif
#if PY_MINOR_VERSION == 11
	P("frame_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_MINOR_VERSION >= 12
	P("shim_owner", FRAME_OWNED_BY_CSTACK);
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_first_line", offsetof(PyCodeObject, co_firstlineno));
	P("code_line_table", offsetof(PyCodeObject, co_linetable));
	P("ascii_size", sizeof(PyASCIIObject));
	P("compact_size", sizeof(PyCompactUnicodeObject));
	return 0;
}

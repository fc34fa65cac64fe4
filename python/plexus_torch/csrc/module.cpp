// module.cpp - the Python module plexus_torch._C: the ProcessGroupPlexus class, made by
// plexus_torch's backend creator (plexus_torch/__init__.py registers it as "plexus").
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_plexus.h"

namespace py = pybind11;
using plexus::torch_backend::ProcessGroupPlexus;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Plexus as a torch.distributed backend (see docs/pytorch.md)";
  // The base class's Python type must exist before ours derives from it.
  py::module::import("torch.distributed");
  py::class_<ProcessGroupPlexus, c10::intrusive_ptr<ProcessGroupPlexus>,
             plexus::torch_backend::BackendBase>(m, "ProcessGroupPlexus")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupPlexus>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           // Creation waits for the other ranks: let other Python threads run meanwhile.
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &ProcessGroupPlexus::transport_name,
                             "the transport Plexus chose, e.g. 'shm' or 'tcp;ofi_rxm'")
      .def_property_readonly("last_algorithm", &ProcessGroupPlexus::last_algorithm,
                             "'collective:algorithm' of the last operation that ran");
  m.def("_mark_interpreter_exiting", [] { plexus::torch_backend::interpreter_exiting = true; },
        "called at exit (atexit): groups destroyed from then on abort instead of waiting for "
        "their peers");
  m.def("version", [] {
    int version = 0;
    plx_get_version(&version);
    return version;
  }, "libplexus's PLX_VERSION (major*10000 + minor*100 + patch)");
}

// The name of the machine a run is on, for run.yaml and TensorBoard's event file names.
#pragma once

#include <string>

namespace saccade {

// gethostname(2)'s answer; "localhost" where it gives none, as TensorBoard's own writers name it.
std::string host_name();

}  // namespace saccade

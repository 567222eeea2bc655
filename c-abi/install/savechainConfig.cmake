# find_package(savechain) gives the imported targets savechain::savechain (the shared
# library, libsavechain.so.<ABI>) and savechain::savechain_static (libsavechain.a, Lua
# inside it, the system's own libraries linked with it). Installed by install.sh.
include("${CMAKE_CURRENT_LIST_DIR}/savechainTargets.cmake")
set(savechain_INCLUDE_DIRS "${_savechain_prefix}/include")
set(savechain_LIBRARIES savechain::savechain)

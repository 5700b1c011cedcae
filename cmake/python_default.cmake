# Sets KILN_PYTHON_DEFAULT: ON when a Python interpreter with development headers is found and
# it can import nanobind (its CMake package folder then goes into nanobind_ROOT), else OFF.
set(KILN_PYTHON_DEFAULT OFF)
find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
if(Python_FOUND)
  execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                  OUTPUT_VARIABLE KILN_NANOBIND_CMAKE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE KILN_NANOBIND_RESULT ERROR_QUIET)
  if(KILN_NANOBIND_RESULT EQUAL 0 AND EXISTS "${KILN_NANOBIND_CMAKE_DIR}")
    set(KILN_PYTHON_DEFAULT ON)
    set(nanobind_ROOT "${KILN_NANOBIND_CMAKE_DIR}")
  endif()
endif()
if(NOT KILN_PYTHON_DEFAULT)
  message(STATUS "kiln: no Python with nanobind (${Python_EXECUTABLE}); the Python module is off by default")
endif()

// cl.hpp: the one place that includes OpenCL-CLHPP, with the version macros every target uses.
// 1.2 is the API floor: NVIDIA, PoCL and Oclgrind all implement it.
#pragma once

#ifndef CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_ENABLE_EXCEPTIONS
#endif
#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_MINIMUM_OPENCL_VERSION
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
#include <CL/opencl.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

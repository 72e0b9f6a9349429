// registry.cpp: the list of variants, in the order --variant all runs them.
#include "reduce/variant.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_sequential_device();
std::unique_ptr<ReduceVariant> make_reduce_bottomup();
std::unique_ptr<ReduceVariant> make_reduce_topdown();
std::unique_ptr<ReduceVariant> make_reduce_interleaved_divergent();
std::unique_ptr<ReduceVariant> make_reduce_interleaved_strided();
std::unique_ptr<ReduceVariant> make_reduce_sequential_addressing();
std::unique_ptr<ReduceVariant> make_reduce_first_add_during_load();
std::unique_ptr<ReduceVariant> make_reduce_unroll_last_warp();
std::unique_ptr<ReduceVariant> make_reduce_complete_unroll();
std::unique_ptr<ReduceVariant> make_reduce_multi_element();
std::unique_ptr<ReduceVariant> make_reduce_butterfly();
std::unique_ptr<ReduceVariant> make_reduce_fast();
std::unique_ptr<ReduceVariant> make_reduce_exact();

const std::vector<std::unique_ptr<ReduceVariant>>& reduce_variants() {
  static const std::vector<std::unique_ptr<ReduceVariant>> v = [] {
    std::vector<std::unique_ptr<ReduceVariant>> r;
    r.push_back(make_reduce_sequential_device());
    r.push_back(make_reduce_bottomup());
    r.push_back(make_reduce_topdown());
    // The seeds' ladder, kernels 1-7 in order, then the butterfly.
    r.push_back(make_reduce_interleaved_divergent());
    r.push_back(make_reduce_interleaved_strided());
    r.push_back(make_reduce_sequential_addressing());
    r.push_back(make_reduce_first_add_during_load());
    r.push_back(make_reduce_unroll_last_warp());
    r.push_back(make_reduce_complete_unroll());
    r.push_back(make_reduce_multi_element());
    r.push_back(make_reduce_butterfly());
    r.push_back(make_reduce_fast());
    r.push_back(make_reduce_exact());
    return r;
  }();
  return v;
}

ReduceVariant* find_reduce_variant(const std::string& name) {
  for (const auto& v : reduce_variants())
    if (v->name() == name) return v.get();
  return nullptr;
}

}  // namespace clreduce

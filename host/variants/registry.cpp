// registry.cpp: the list of variants, in the order --variant all runs them.
#include "../variant.hpp"

namespace clreduce {

std::unique_ptr<ReduceVariant> make_reduce_sequential_device();
std::unique_ptr<ReduceVariant> make_reduce_bottomup();
std::unique_ptr<ReduceVariant> make_reduce_topdown();
std::unique_ptr<ReduceVariant> make_reduce_fast();

const std::vector<std::unique_ptr<ReduceVariant>>& reduce_variants() {
  static const std::vector<std::unique_ptr<ReduceVariant>> v = [] {
    std::vector<std::unique_ptr<ReduceVariant>> r;
    r.push_back(make_reduce_sequential_device());
    r.push_back(make_reduce_bottomup());
    r.push_back(make_reduce_topdown());
    r.push_back(make_reduce_fast());
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

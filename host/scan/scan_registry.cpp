// scan_registry.cpp: the list of scan variants, in the order --variant all runs them (after
// the reductions).
#include "scan/scan_variant.hpp"

namespace clreduce {

std::unique_ptr<ScanVariant> make_scan_hillis_steele();
std::unique_ptr<ScanVariant> make_scan_blelloch();
std::unique_ptr<ScanVariant> make_scan_hierarchical();
std::unique_ptr<ScanVariant> make_scan_lookback();
std::unique_ptr<ScanVariant> make_scan_fast();

const std::vector<std::unique_ptr<ScanVariant>>& scan_variants() {
  static const std::vector<std::unique_ptr<ScanVariant>> v = [] {
    std::vector<std::unique_ptr<ScanVariant>> r;
    r.push_back(make_scan_hillis_steele());
    r.push_back(make_scan_blelloch());
    r.push_back(make_scan_hierarchical());
    r.push_back(make_scan_lookback());
    r.push_back(make_scan_fast());
    return r;
  }();
  return v;
}

ScanVariant* find_scan_variant(const std::string& name) {
  for (const auto& v : scan_variants())
    if (v->name() == name) return v.get();
  return nullptr;
}

}  // namespace clreduce

// Live-handle table. Handles are opaque ids, never reused, so a stale
// handle can never alias a newer object the way a recycled pointer could.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

namespace scuda_double {

template <class T>
class Registry {
 public:
  explicit Registry(uintptr_t base) : next_(base) {}

  uintptr_t add(std::unique_ptr<T> item) {
    next_ += 16;
    items_[next_] = std::move(item);
    return next_;
  }

  template <class H>
  T* find(H handle) const {
    auto it = items_.find(reinterpret_cast<uintptr_t>(handle));
    return it == items_.end() ? nullptr : it->second.get();
  }

  template <class H>
  bool erase(H handle) {
    return items_.erase(reinterpret_cast<uintptr_t>(handle)) != 0;
  }

  template <class Pred>
  void erase_if(Pred pred) {
    std::erase_if(items_, [&](const auto& kv) { return pred(*kv.second); });
  }

  const std::map<uintptr_t, std::unique_ptr<T>>& items() const { return items_; }

 private:
  std::map<uintptr_t, std::unique_ptr<T>> items_;
  uintptr_t next_;
};

template <class H>
H as_handle(uintptr_t id) {
  return reinterpret_cast<H>(id);
}

}  // namespace scuda_double

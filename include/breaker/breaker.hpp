/* SPDX-License-Identifier: MIT */
/*
 * breaker/breaker.hpp - an optional C++17 helper: a permit guard that settles
 * a forgotten permit.
 *
 * Optional and header-only: it adds nothing to libbreaker and C++ callers do
 * not need it (breaker.h, breaker/registry.h and breaker/compose.h compile as
 * C++ on their own). Everything here is inline over the C API of breaker.h,
 * whose rules apply unchanged.
 *
 *   breaker_cxx::permit_guard g(b);            // breaker_acquire()
 *   if (!g) return serve_fallback();           // refused: g.status() says why
 *   int status = http_get(...);
 *   g.complete(breaker_classify_http(status)); // settle it yourself...
 *   // ...or let it go out of scope: a guard whose admitted permit was not
 *   // completed settles it as BREAKER_IGNORED in its destructor, so an early
 *   // return or an exception never leaks a half-open probe slot.
 *
 * A guard is move-only: exactly one object owns the duty to settle. The
 * breaker must outlive every guard on it. A guard is not thread-safe (like any
 * object); hand a permit to another thread with release() and complete it
 * there with breaker_complete(). Nothing here throws or allocates.
 */
#ifndef BREAKER_BREAKER_HPP
#define BREAKER_BREAKER_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "breaker/breaker.hpp needs C++17; C code includes breaker.h"
#endif

#include <breaker.h>

#include <cstdint>

namespace breaker_cxx {

class permit_guard {
  public:
    /* An empty guard: nothing to settle; complete() answers BREAKER_EINVAL. */
    permit_guard() noexcept = default;

    /* Ask `b` for a permit (breaker_acquire()). The guard is admitted when
     * status() is BREAKER_OK; a refused guard has nothing to settle. */
    explicit permit_guard(breaker *b) noexcept
        : b_(b), status_(breaker_acquire(b, &permit_)), settled_(false) {}

    permit_guard(const permit_guard &) = delete;
    permit_guard &operator=(const permit_guard &) = delete;

    permit_guard(permit_guard &&other) noexcept
        : b_(other.b_), permit_(other.permit_), status_(other.status_), settled_(other.settled_) {
        other.forget();
    }

    /* Settles this guard's own pending permit (as IGNORED) before taking
     * over `other`'s. */
    permit_guard &operator=(permit_guard &&other) noexcept {
        if (this != &other) {
            settle_forgotten();
            b_ = other.b_;
            permit_ = other.permit_;
            status_ = other.status_;
            settled_ = other.settled_;
            other.forget();
        }
        return *this;
    }

    ~permit_guard() { settle_forgotten(); }

    /* breaker_acquire()'s answer: BREAKER_OK (admitted), a BREAKER_REJECTED_*
     * code, or BREAKER_EINVAL for an empty or moved-from guard. */
    int status() const noexcept { return status_; }
    bool admitted() const noexcept { return b_ != nullptr && status_ == BREAKER_OK; }
    explicit operator bool() const noexcept { return admitted(); }

    /* Admitted and not yet completed or released: the destructor would
     * settle it. */
    bool pending() const noexcept { return admitted() && !settled_; }

    /* breaker_permit_is_probe(): 1 if admitted as a half-open probe. */
    bool is_probe() const noexcept { return admitted() && breaker_permit_is_probe(&permit_) != 0; }

    /* breaker_permit_would_reject(): the refusal shadow mode spared this
     * permit (what a shadow log writes beside the call), or
     * BREAKER_REFUSAL_NONE for a real admission, a refused or an empty
     * guard. */
    enum breaker_refusal would_reject() const noexcept {
        return admitted() ? breaker_permit_would_reject(&permit_) : BREAKER_REFUSAL_NONE;
    }

    /* The breaker, or nullptr for an empty guard. */
    breaker *get() const noexcept { return b_; }

    /* breaker_complete() with `outcome`, and the same answers: completing
     * twice answers BREAKER_ALREADY_SETTLED, a refused guard BREAKER_EINVAL
     * (as the C API does). An empty guard answers BREAKER_EINVAL. */
    int complete(enum breaker_outcome outcome) noexcept {
        if (b_ == nullptr) return BREAKER_EINVAL;
        if (status_ == BREAKER_OK) settled_ = true;
        return breaker_complete(b_, &permit_, outcome);
    }

    /* breaker_complete_from(): the same, naming the call's source. */
    int complete_from(enum breaker_outcome outcome, std::uint64_t source) noexcept {
        if (b_ == nullptr) return BREAKER_EINVAL;
        if (status_ == BREAKER_OK) settled_ = true;
        return breaker_complete_from(b_, &permit_, outcome, source);
    }

    /* Give up the duty to settle: returns the permit, which the caller must
     * now complete exactly once with breaker_complete() on get()'s breaker
     * (from any thread). The guard keeps status() and settles nothing. */
    breaker_permit release() noexcept {
        settled_ = true;
        return permit_;
    }

  private:
    void settle_forgotten() noexcept {
        if (pending()) (void)breaker_complete(b_, &permit_, BREAKER_IGNORED);
        settled_ = true;
    }
    void forget() noexcept {
        b_ = nullptr;
        status_ = BREAKER_EINVAL;
        settled_ = true;
    }

    breaker *b_ = nullptr;
    breaker_permit permit_{};
    int status_ = BREAKER_EINVAL;
    bool settled_ = true;
};

} // namespace breaker_cxx

#endif /* BREAKER_BREAKER_HPP */

// A mutex the compiler can check: clang's thread-safety analysis (-Wthread-safety) knows which
// members a mutex guards (PYLON_GUARDED_BY) and which functions need it held (PYLON_REQUIRES, the
// `*Locked` functions), and reports an access without it. libstdc++'s std::mutex carries no such
// annotations, hence this thin wrapper; with another compiler the macros are empty. Every mutex in
// src/ is one of these, its guarded members marked: the test suite (test/common/CMakeLists.txt,
// thread_safety_check) runs the analysis on the files that use the annotations, and fails on a
// standard mutex anywhere in src/ but here (scripts/bare-mutex.sh).
//
// Waits on a std::condition_variable go through the MutexLock that holds the mutex. Wait in an
// explicit loop (`while (!ready_) lock.Wait(cv_);`): the analysis does not see that a predicate
// lambda runs with the mutex held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define PYLON_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define PYLON_THREAD_ANNOTATION(x)
#endif

#define PYLON_CAPABILITY(name) PYLON_THREAD_ANNOTATION(capability(name))
#define PYLON_SCOPED_CAPABILITY PYLON_THREAD_ANNOTATION(scoped_lockable)
#define PYLON_GUARDED_BY(mu) PYLON_THREAD_ANNOTATION(guarded_by(mu))
#define PYLON_REQUIRES(...) PYLON_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define PYLON_EXCLUDES(...) PYLON_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define PYLON_ACQUIRE(...) PYLON_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define PYLON_RELEASE(...) PYLON_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace pylon {

class PYLON_CAPABILITY("mutex") Mutex {
 public:
  void lock() PYLON_ACQUIRE() { mu_.lock(); }
  void unlock() PYLON_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope (like std::unique_lock): Unlock() and Lock() in between, and the
// condition-variable waits, which release and re-take it.
class PYLON_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) PYLON_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() PYLON_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() PYLON_RELEASE() { lock_.unlock(); }
  void Lock() PYLON_ACQUIRE() { lock_.lock(); }

  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class Rep, class Period>
  std::cv_status WaitFor(std::condition_variable& cv,
                         const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout);
  }
  template <class ClockT, class DurationT>
  std::cv_status WaitUntil(std::condition_variable& cv,
                           const std::chrono::time_point<ClockT, DurationT>& deadline) {
    return cv.wait_until(lock_, deadline);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace pylon

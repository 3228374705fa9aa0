#include "apiserver/store.h"

#include <algorithm>
#include <charconv>

namespace pylon::apiserver {
namespace {

std::string TypeKey(const std::string& g, const std::string& v, const std::string& r) {
  return g + "/" + v + "/" + r;
}
std::string ObjKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

std::optional<std::uint64_t> ParseRv(const std::string& s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::map<std::string, std::string> Labels(const Json& obj) {
  std::map<std::string, std::string> out;
  if (const Json* l = Find(obj, {"metadata", "labels"}); l && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  return out;
}

std::vector<std::string> Finalizers(const Json& obj) {
  std::vector<std::string> out;
  if (const Json* f = Find(obj, {"metadata", "finalizers"}); f && f->is_array())
    for (const auto& v : *f)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

ObjectPtr WithRv(const Json& obj, std::uint64_t rv) {
  auto copy = std::make_shared<Json>(obj);
  (*copy)["metadata"]["resourceVersion"] = std::to_string(rv);
  return copy;
}

std::string CreateError(const ResourceType& t, const std::string& what) {
  return t.kind + " in version \"" + t.version + "\" cannot be handled as a " + t.kind + ": " +
         what;
}

// Decode-level checks of ObjectMeta (wrong JSON types are 400 on the real server).
std::optional<ApiError> CheckMetaTypes(const ResourceType& t, const Json& meta) {
  for (const char* m : {"labels", "annotations"}) {
    const Json* v = Find(meta, {m});
    if (!v || v->is_null()) continue;
    bool ok = v->is_object();
    if (ok)
      for (auto it = v->begin(); it != v->end(); ++it) ok = ok && it.value().is_string();
    if (!ok)
      return BadRequestError(CreateError(
          t, std::string("json: cannot unmarshal into Go struct field ObjectMeta.metadata.") + m +
                 " of type map[string]string"));
  }
  for (const char* m : {"name", "namespace", "generateName", "resourceVersion", "uid"}) {
    const Json* v = Find(meta, {m});
    if (v && !v->is_null() && !v->is_string())
      return BadRequestError(CreateError(
          t, std::string("json: cannot unmarshal into Go struct field ObjectMeta.metadata.") + m +
                 " of type string"));
  }
  if (const Json* f = Find(meta, {"finalizers"}); f && !f->is_null()) {
    bool ok = f->is_array();
    if (ok)
      for (const auto& v : *f) ok = ok && v.is_string();
    if (!ok)
      return BadRequestError(CreateError(t,
                                         "json: cannot unmarshal into Go struct field "
                                         "ObjectMeta.metadata.finalizers of type []string"));
  }
  return std::nullopt;
}

FieldErrors ValidateName(const Strategy& s, const std::string& name) {
  FieldErrors errs;
  std::string rule = s.NameRule();
  if (rule == "label1035" && !IsDns1035Label(name)) {
    errs.push_back(FieldError::Invalid(
        "metadata.name", name,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"));
  } else if (rule == "label1123" && !IsDns1123Label(name)) {
    errs.push_back(FieldError::Invalid(
        "metadata.name", name,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
        "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
        "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
  } else if (rule == "pathsegment") {
    if (name == "." || name == "..")
      errs.push_back(FieldError::Invalid("metadata.name", name, "may not be '" + name + "'"));
    for (const char* bad : {"/", "%"})
      if (name.find(bad) != std::string::npos)
        errs.push_back(FieldError::Invalid("metadata.name", name,
                                           std::string("may not contain '") + bad + "'"));
  } else if (rule == "subdomain" && !IsDns1123Subdomain(name)) {
    errs.push_back(FieldError::Invalid(
        "metadata.name", name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
  }
  return errs;
}

}  // namespace

Watcher::Batch Watcher::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
  Batch b;
  b.events.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  b.closed = closed_;
  b.progress = progress_;
  return b;
}

Store::Store(const Clock& clock, StoreOptions options)
    : clock_(clock),
      opts_(std::move(options)),
      services_(opts_.service_network),
      rng_(std::random_device{}()) {
  for (auto& t : BuiltinTypes()) {
    types_[TypeKey(t->group, t->version, t->resource)] = t;
    if (!strategies_.count(t->StoreKey())) strategies_[t->StoreKey()] = MakeStrategy(t, &services_);
  }
  std::lock_guard<std::mutex> lock(mu_);
  TypePtr ns_type = types_.at(TypeKey("", "v1", "namespaces"));
  for (const auto& ns : opts_.initial_namespaces)
    (void)CreateLocked(*ns_type, "", Json{{"metadata", {{"name", ns}}}}, false);
}

Store::~Store() { CloseAllWatches(); }

TypePtr Store::Lookup(const std::string& group, const std::string& version,
                      const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = types_.find(TypeKey(group, version, resource));
  return it == types_.end() ? nullptr : it->second;
}

std::vector<TypePtr> Store::Types() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TypePtr> out;
  for (const auto& [k, t] : types_) out.push_back(t);
  return out;
}

std::uint64_t Store::CurrentRv() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

std::size_t Store::WatcherCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

std::shared_ptr<Strategy> Store::StrategyPtr(const ResourceType& type) {
  auto it = strategies_.find(type.StoreKey());
  if (it == strategies_.end()) {
    auto t = std::make_shared<ResourceType>(type);
    it = strategies_.emplace(type.StoreKey(), MakeStrategy(t, &services_)).first;
  }
  it->second->set_now(clock_.WallNow());
  return it->second;
}

Strategy& Store::StrategyFor(const ResourceType& type) { return *StrategyPtr(type); }

bool Store::SupportsField(const ResourceType& type, std::string_view field) const {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = strategies_.find(type.StoreKey());
  if (it == strategies_.end()) return false;
  // A field is supported when the strategy answers for it on an empty object.
  return it->second->Field(Json::object(), field).has_value();
}

std::string Store::NewUid() {
  std::uint64_t a = rng_(), b = rng_();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(
      buf, sizeof(buf), "%08llx-%04llx-%04llx-%04llx-%012llx",
      static_cast<unsigned long long>(a >> 32), static_cast<unsigned long long>((a >> 16) & 0xffff),
      static_cast<unsigned long long>(a & 0xffff), static_cast<unsigned long long>(b >> 48),
      static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

ApiResult<ObjectPtr> Store::Get(const ResourceType& type, const std::string& ns,
                                const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& bucket = data_[type.StoreKey()];
  auto it = bucket.find(ObjKey(type.namespaced ? ns : "", name));
  if (it == bucket.end()) return Reject(NotFoundError(type.Gr(), name));
  return it->second;
}

bool Store::Matches(const Watcher& w, const Json& obj) const {
  if (!w.ns_.empty() && GetString(obj, {"metadata", "namespace"}) != w.ns_) return false;
  if (!w.labels_.Empty() && !w.labels_.Matches(Labels(obj))) return false;
  if (!w.fields_.Empty() &&
      !w.fields_.Matches([&](std::string_view f) { return FieldValue(*w.strategy_, obj, f); }))
    return false;
  return true;
}

ApiResult<ListResult> Store::List(const ResourceType& type, const ListOptions& o) {
  auto labels = LabelSelector::Parse(o.label_selector);
  if (!labels) return Reject(BadRequestError(labels.error().message()));
  auto fields = FieldSelector::Parse(o.field_selector);
  if (!fields) return Reject(BadRequestError(fields.error().message()));
  if (auto st = fields->Validate([&](std::string_view f) { return SupportsField(type, f); }); !st)
    return Reject(BadRequestError(st.error().message()));
  std::lock_guard<std::mutex> lock(mu_);
  Watcher filter;  // reuse the watch filter for matching
  filter.ns_ = type.namespaced ? o.ns : "";
  filter.labels_ = *labels;
  filter.fields_ = *fields;
  filter.strategy_ = StrategyPtr(type);
  ListResult result;
  result.resource_version = rv_;
  if (!o.resource_version.empty() && o.resource_version != "0") {
    auto n = ParseRv(o.resource_version);
    if (!n) return Reject(BadRequestError("invalid resource version: " + o.resource_version));
    if (*n > rv_) return Reject(TooLargeResourceVersionError(*n, rv_));
    if (o.limit > 0 && *n < compacted_rv_)
      return Reject(ExpiredError("The resourceVersion for the provided list is too old."));
  }
  std::string start;
  if (!o.continue_token.empty()) {
    auto raw = Base64Decode(o.continue_token);
    std::string err;
    auto tok = raw ? ParseJson(*raw, &err) : std::nullopt;
    if (!tok || !tok->is_object() || !Find(*tok, {"rv"}) || !(*tok)["rv"].is_number_integer())
      return Reject(BadRequestError("continue key is not valid: invalid continue token"));
    std::uint64_t trv = (*tok)["rv"].get<std::uint64_t>();
    if (trv < compacted_rv_)
      return Reject(ExpiredError(
          "The provided continue parameter is too old to display a consistent list result. You can "
          "start a new list without the continue parameter, or use the continue token in this "
          "response to retrieve the remainder of the results. Continuing with the provided token "
          "results in an inconsistent list - objects that were created, modified, or deleted "
          "between the time the first chunk was returned and now may show up in the list."));
    start = StrOr(*tok, "start");
    result.resource_version = trv;
  }
  auto& bucket = data_[type.StoreKey()];
  auto it = start.empty() ? bucket.begin() : bucket.upper_bound(start);
  long long remaining = 0;
  std::string last_key;
  for (; it != bucket.end(); ++it) {
    if (!Matches(filter, *it->second)) continue;
    if (o.limit > 0 && static_cast<long long>(result.items.size()) >= o.limit) {
      ++remaining;
      continue;
    }
    result.items.push_back(it->second);
    last_key = it->first;
  }
  if (remaining > 0) {
    Json tok = {{"v", "meta.k8s.io/v1"}, {"rv", result.resource_version}, {"start", last_key}};
    result.continue_token = Base64Encode(Dump(tok));
    result.remaining = remaining;
  }
  return result;
}

ApiResult<ObjectPtr> Store::Create(const ResourceType& type, const std::string& ns, Json body,
                                   bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  return CreateLocked(type, ns, std::move(body), dry_run);
}

ApiResult<ObjectPtr> Store::CreateLocked(const ResourceType& type, const std::string& ns, Json body,
                                         bool dry_run) {
  if (!body.is_object())
    return Reject(BadRequestError(CreateError(type, "the body is not a JSON object")));
  std::string storage_av =
      type.group.empty() ? type.storage_version : type.group + "/" + type.storage_version;
  std::string kind = StrOr(body, "kind"), av = StrOr(body, "apiVersion");
  if (!av.empty() && av != type.ApiVersion() && av != storage_av)
    return Reject(BadRequestError("the API version in the data (" + av +
                                  ") does not match the expected API version (" +
                                  type.ApiVersion() + ")"));
  if (!kind.empty() && kind != type.kind)
    return Reject(
        BadRequestError(CreateError(type, "the kind in the data (" + kind + ") does not match")));
  body["kind"] = type.kind;
  body["apiVersion"] = storage_av;
  // Before any reference into `body` is taken: decoding may add or remove top-level keys.
  if (auto e = StrategyFor(type).Decode(body)) return Reject(*e);
  if (body.contains("metadata") && !body["metadata"].is_object() && !body["metadata"].is_null())
    return Reject(BadRequestError(CreateError(type, "metadata must be an object")));
  Json& meta = ObjectAt(body, "metadata");
  if (auto e = CheckMetaTypes(type, meta)) return Reject(*e);
  if (type.namespaced) {
    std::string mns = StrOr(meta, "namespace");
    if (!mns.empty() && mns != ns)
      return Reject(BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the request"));
    if (ns.empty()) return Reject(MethodNotAllowedError());
    meta["namespace"] = ns;
    if (!data_["/namespaces"].count(ObjKey("", ns)))
      return Reject(NotFoundError({"", "namespaces"}, ns));
  } else {
    meta.erase("namespace");
  }
  std::string name = StrOr(meta, "name");
  Strategy& strategy = StrategyFor(type);
  if (name.empty()) {
    std::string gen = StrOr(meta, "generateName");
    if (gen.empty())
      return Reject(InvalidError(
          type.group, type.kind, "",
          {FieldError::Required("metadata.name", "name or generateName is required")}));
    static const char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
    name = gen;
    for (int i = 0; i < 5; ++i) name += kChars[rng_() % (sizeof(kChars) - 1)];
    meta["name"] = name;
  }
  if (!StrOr(meta, "resourceVersion").empty())
    return Reject(InternalError("resourceVersion should not be set on objects to be created"));
  for (const char* f : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation", "selfLink", "managedFields"})
    meta.erase(f);
  strategy.PrepareForCreate(body);
  FieldErrors errs = ValidateName(strategy, name);
  FieldErrors kind_errs = strategy.Validate(body, nullptr);
  errs.insert(errs.end(), kind_errs.begin(), kind_errs.end());
  if (!errs.empty()) return Reject(InvalidError(type.group, type.kind, name, errs));
  auto& bucket = data_[type.StoreKey()];
  std::string key = ObjKey(type.namespaced ? ns : "", name);
  if (bucket.count(key)) return Reject(AlreadyExistsError(type.Gr(), name));
  errs = strategy.Allocate(body, nullptr);
  if (!errs.empty()) return Reject(InvalidError(type.group, type.kind, name, errs));
  Json& m = body["metadata"];
  m["uid"] = NewUid();
  m["creationTimestamp"] = FormatTime(clock_.WallNow());
  if (strategy.HasGeneration()) m["generation"] = 1;
  strategy.Canonicalize(body);
  if (dry_run) {
    strategy.Release(body, nullptr);
    return std::make_shared<const Json>(CanonicalOrder(body, type.custom));
  }
  // Not through `m`: Canonicalize may have reordered the keys of `body`.
  body["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto ptr = std::make_shared<const Json>(CanonicalOrder(body, type.custom));
  bucket[key] = ptr;
  Commit("ADDED", type.StoreKey(), ptr, nullptr);
  if (type.group == "apiextensions.k8s.io") OnCrdChange(ptr.get(), nullptr);
  return ptr;
}

ApiResult<ObjectPtr> Store::Update(const ResourceType& type, const std::string& ns,
                                   const std::string& name, Json body, bool status, bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  return UpdateLocked(type, ns, name, std::move(body), status, dry_run);
}

ApiResult<ObjectPtr> Store::UpdateLocked(const ResourceType& type, const std::string& ns,
                                         const std::string& name, Json body, bool status,
                                         bool dry_run) {
  auto& bucket = data_[type.StoreKey()];
  std::string key = ObjKey(type.namespaced ? ns : "", name);
  auto it = bucket.find(key);
  if (it == bucket.end()) return Reject(NotFoundError(type.Gr(), name));
  ObjectPtr old_ptr = it->second;
  const Json& old = *old_ptr;
  if (!body.is_object())
    return Reject(BadRequestError(CreateError(type, "the body is not a JSON object")));
  std::string storage_av = GetString(old, {"apiVersion"});
  std::string kind = StrOr(body, "kind"), av = StrOr(body, "apiVersion");
  if (!av.empty() && av != type.ApiVersion() && av != storage_av)
    return Reject(BadRequestError("the API version in the data (" + av +
                                  ") does not match the expected API version (" +
                                  type.ApiVersion() + ")"));
  if (!kind.empty() && kind != type.kind)
    return Reject(
        BadRequestError(CreateError(type, "the kind in the data (" + kind + ") does not match")));
  body["kind"] = type.kind;
  body["apiVersion"] = storage_av;
  // Before any reference into `body` is taken: decoding may add or remove top-level keys.
  if (auto e = StrategyFor(type).Decode(body)) return Reject(*e);
  if (body.contains("metadata") && !body["metadata"].is_object() && !body["metadata"].is_null())
    return Reject(BadRequestError(CreateError(type, "metadata must be an object")));
  Json& meta = ObjectAt(body, "metadata");
  if (auto e = CheckMetaTypes(type, meta)) return Reject(*e);
  std::string bname = StrOr(meta, "name");
  if (bname.empty())
    meta["name"] = name;
  else if (bname != name)
    return Reject(BadRequestError("the name of the object (" + bname +
                                  ") does not match the name on the URL (" + name + ")"));
  if (type.namespaced) {
    std::string mns = StrOr(meta, "namespace");
    if (!mns.empty() && mns != ns)
      return Reject(BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the request"));
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  Strategy& strategy = StrategyFor(type);
  std::string old_rv = GetString(old, {"metadata", "resourceVersion"});
  std::string rvs = StrOr(meta, "resourceVersion");
  if (rvs.empty()) {
    if (!strategy.AllowUnconditionalUpdate()) {
      FieldError fe = FieldError::Invalid("metadata.resourceVersion", nullptr,
                                          "must be specified for an update");
      fe.raw_value = "0x0";
      return Reject(InvalidError(type.group, type.kind, name, {fe}));
    }
  } else if (rvs != old_rv) {
    if (!ParseRv(rvs)) return Reject(BadRequestError("invalid resourceVersion: " + rvs));
    return Reject(StaleConflictError(type.Gr(), name));
  }
  const Json& ometa = old["metadata"];
  std::string uid = StrOr(meta, "uid");
  if (!uid.empty() && uid != StrOr(ometa, "uid"))
    return Reject(InvalidError(type.group, type.kind, name,
                               {FieldError::Invalid("metadata.uid", uid, "field is immutable")}));
  for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation"}) {
    if (ometa.contains(f))
      meta[f] = ometa[f];
    else
      meta.erase(f);
  }
  meta.erase("selfLink");
  meta.erase("managedFields");
  meta["resourceVersion"] = old_rv;
  bool deleting = ometa.contains("deletionTimestamp");
  if (deleting) {
    auto of = Finalizers(old);
    Json added = Json::array();
    for (const auto& f : Finalizers(body))
      if (std::find(of.begin(), of.end(), f) == of.end()) added.push_back(f);
    if (!added.empty())
      return Reject(
          InvalidError(type.group, type.kind, name,
                       {FieldError::Forbidden("metadata.finalizers",
                                              "no new finalizers can be added if the object is "
                                              "being deleted, found new finalizers " +
                                                  FormatErrorValue(added))}));
  }
  FieldErrors errs;
  if (status) {
    strategy.PrepareForStatusUpdate(body, old);
    errs = strategy.ValidateStatus(body, old);
  } else {
    strategy.PrepareForUpdate(body, old);
    errs = ValidateName(strategy, name);
    FieldErrors kind_errs = strategy.Validate(body, &old);
    errs.insert(errs.end(), kind_errs.begin(), kind_errs.end());
  }
  if (!errs.empty()) return Reject(InvalidError(type.group, type.kind, name, errs));
  if (strategy.HasGeneration() && strategy.GenerationChanged(body, old))
    body["metadata"]["generation"] = IntOr(ometa, "generation", 0) + 1;
  errs = strategy.Allocate(body, &old);
  if (!errs.empty()) return Reject(InvalidError(type.group, type.kind, name, errs));
  strategy.Canonicalize(body);
  body = CanonicalOrder(body, type.custom);
  if (SemanticEqual(body, old)) return old_ptr;  // no-op: same RV, no event
  if (dry_run) {
    strategy.Release(body, &old);
    return std::make_shared<const Json>(std::move(body));
  }
  if (deleting && Finalizers(body).empty()) {
    strategy.Release(body, &old);
    ObjectPtr gone = RemoveLocked(type, key, body);
    return gone;
  }
  body["metadata"]["resourceVersion"] = std::to_string(++rv_);
  auto ptr = std::make_shared<const Json>(std::move(body));
  it->second = ptr;
  strategy.Release(old, ptr.get());
  Commit("MODIFIED", type.StoreKey(), ptr, old_ptr);
  if (type.group == "apiextensions.k8s.io") OnCrdChange(ptr.get(), &old);
  return ptr;
}

ApiResult<ObjectPtr> Store::Patch(const ResourceType& type, const std::string& ns,
                                  const std::string& name, PatchType patch_type,
                                  std::string_view body, bool status, bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  if (patch_type == PatchType::kApply ||
      (patch_type == PatchType::kStrategicMerge && type.custom)) {
    std::vector<std::string> accepted = {"application/json-patch+json",
                                         "application/merge-patch+json"};
    if (!type.custom) accepted.push_back("application/strategic-merge-patch+json");
    return Reject(UnsupportedMediaTypeError(accepted));
  }
  auto& bucket = data_[type.StoreKey()];
  auto it = bucket.find(ObjKey(type.namespaced ? ns : "", name));
  if (it == bucket.end()) return Reject(NotFoundError(type.Gr(), name));
  ObjectPtr old = it->second;
  auto patched = ApplyPatch(patch_type, *old, body);
  if (!patched) return Reject(patched.error());
  if (!patched->is_object())
    return Reject(BadRequestError("the patched object is not a JSON object"));
  // A patch that leaves out metadata.resourceVersion applies to the current object; one that
  // sets it makes it a precondition.
  if (GetString(*patched, {"metadata", "resourceVersion"}).empty())
    ObjectAt(*patched, "metadata")["resourceVersion"] =
        GetString(*old, {"metadata", "resourceVersion"});
  return UpdateLocked(type, ns, name, std::move(*patched), status, dry_run);
}

ObjectPtr Store::RemoveLocked(const ResourceType& type, const std::string& key, const Json& last) {
  auto& bucket = data_[type.StoreKey()];
  auto ptr = WithRv(last, ++rv_);
  auto it = bucket.find(key);
  if (it != bucket.end()) {
    StrategyFor(type).Release(*it->second, nullptr);
    bucket.erase(it);
  }
  Commit("DELETED", type.StoreKey(), ptr, nullptr);
  return ptr;
}

ApiResult<ObjectPtr> Store::StatusSuccess(const ResourceType& type, const Json& obj) {
  Json s = Json::object();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = Json::object();
  s["status"] = "Success";
  Json d = Json::object();
  d["name"] = GetString(obj, {"metadata", "name"});
  if (!type.group.empty()) d["group"] = type.group;
  d["kind"] = type.resource;
  d["uid"] = GetString(obj, {"metadata", "uid"});
  s["details"] = d;
  return std::make_shared<const Json>(std::move(s));
}

ApiResult<ObjectPtr> Store::Delete(const ResourceType& type, const std::string& ns,
                                   const std::string& name, const Json& options, bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  return DeleteLocked(type, ns, name, options, dry_run);
}

ApiResult<ObjectPtr> Store::DeleteLocked(const ResourceType& type, const std::string& ns,
                                         const std::string& name, const Json& options,
                                         bool dry_run) {
  auto& bucket = data_[type.StoreKey()];
  std::string key = ObjKey(type.namespaced ? ns : "", name);
  auto it = bucket.find(key);
  if (it == bucket.end()) return Reject(NotFoundError(type.Gr(), name));
  ObjectPtr obj = it->second;
  const Json& meta = (*obj)["metadata"];
  if (const Json* pre = Find(options, {"preconditions"}); pre && pre->is_object()) {
    std::string puid = StrOr(*pre, "uid"), prv = StrOr(*pre, "resourceVersion");
    if (!puid.empty() && puid != StrOr(meta, "uid"))
      return Reject(ConflictError(type.Gr(), name,
                                  "Precondition failed: UID in precondition: " + puid +
                                      ", UID in object meta: " + StrOr(meta, "uid")));
    if (!prv.empty() && prv != StrOr(meta, "resourceVersion"))
      return Reject(
          ConflictError(type.Gr(), name,
                        "Precondition failed: ResourceVersion in precondition: " + prv +
                            ", ResourceVersion in object meta: " + StrOr(meta, "resourceVersion")));
  }
  Strategy& strategy = StrategyFor(type);
  if (!Finalizers(*obj).empty()) {
    if (meta.contains("deletionTimestamp") || dry_run) return obj;
    Json next = *obj;
    next["metadata"]["deletionTimestamp"] = FormatTime(clock_.WallNow());
    next["metadata"]["deletionGracePeriodSeconds"] = 0;
    next["metadata"]["resourceVersion"] = std::to_string(++rv_);
    auto ptr = std::make_shared<const Json>(CanonicalOrder(next, type.custom));
    it->second = ptr;
    Commit("MODIFIED", type.StoreKey(), ptr, obj);
    return ptr;
  }
  if (dry_run)
    return strategy.ReturnDeletedObject() ? ApiResult<ObjectPtr>(obj) : StatusSuccess(type, *obj);
  if (type.group.empty() && type.resource == "namespaces") {
    // Cascade: the namespace's contents go first (the real namespace controller does this
    // asynchronously; here it is immediate).
    std::vector<std::pair<TypePtr, std::string>> doomed;
    for (const auto& [tk, t] : types_) {
      if (!t->namespaced || t->group == "events.k8s.io") continue;
      if (t->custom && t->version != t->storage_version) continue;
      for (const auto& [k, o] : data_[t->StoreKey()])
        if (GetString(*o, {"metadata", "namespace"}) == name) doomed.emplace_back(t, k);
    }
    for (const auto& [t, k] : doomed) {
      auto& b = data_[t->StoreKey()];
      auto f = b.find(k);
      if (f != b.end()) RemoveLocked(*t, k, *f->second);
    }
  }
  if (type.group == "apiextensions.k8s.io") {
    std::string skey =
        GetString(*obj, {"spec", "group"}) + "/" + GetString(*obj, {"spec", "names", "plural"});
    TypePtr crt;
    for (const auto& [tk, t] : types_)
      if (t->custom && t->StoreKey() == skey) crt = t;
    if (crt) {
      std::vector<std::string> keys;
      for (const auto& [k, o] : data_[skey]) keys.push_back(k);
      for (const auto& k : keys) RemoveLocked(*crt, k, *data_[skey][k]);
    }
  }
  ObjectPtr gone = RemoveLocked(type, key, *obj);
  if (type.group == "apiextensions.k8s.io") OnCrdChange(nullptr, gone.get());
  if (strategy.ReturnDeletedObject()) return gone;
  return StatusSuccess(type, *gone);
}

ApiResult<std::vector<ObjectPtr>> Store::DeleteCollection(const ResourceType& type,
                                                          const ListOptions& options) {
  auto list = List(type, options);
  if (!list) return Reject(list.error());
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ObjectPtr> out;
  for (const auto& o : list->items) {
    auto r = DeleteLocked(type, GetString(*o, {"metadata", "namespace"}),
                          GetString(*o, {"metadata", "name"}), Json::object(), false);
    if (r) out.push_back(*r);
  }
  return out;
}

void Store::Deliver(Watcher& w, const HistoryEvent& ev) {
  std::lock_guard<std::mutex> lock(w.mu_);
  if (w.closed_) return;
  bool wake = false;
  if (w.key_ == ev.key) {
    const std::size_t queued = w.queue_.size();
    bool cur = Matches(w, *ev.object);
    bool was = ev.prev && Matches(w, *ev.prev);
    std::string_view t = ev.type;
    if (t == "ADDED" || t == "DELETED") {
      if (cur) w.queue_.push_back({ev.type, ev.object});
    } else if (cur && was) {
      w.queue_.push_back({"MODIFIED", ev.object});
    } else if (cur) {
      w.queue_.push_back({"ADDED", ev.object});
    } else if (was) {
      w.queue_.push_back({"DELETED", WithRv(*ev.prev, ev.rv)});
    }
    if (w.queue_.size() > opts_.watch_queue) {
      w.closed_ = true;  // too slow: the client re-watches from its last RV
      w.queue_.clear();
    }
    wake = w.closed_ || w.queue_.size() != queued;
  }
  w.progress_ = ev.rv;
  // Only a queued event or a close ends a Wait early; progress alone is read by the next Wait
  // (within its 250 ms), so waking every watcher on every commit would only cost context switches.
  if (wake) w.cv_.notify_all();
}

void Store::Commit(const char* type, const std::string& key, ObjectPtr obj, ObjectPtr prev) {
  HistoryEvent ev{rv_, type, key, std::move(obj), std::move(prev)};
  for (auto& w : watchers_) Deliver(*w, ev);
  history_.push_back(std::move(ev));
  while (history_.size() > opts_.history) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

ApiResult<std::shared_ptr<Watcher>> Store::Watch(const ResourceType& type, const WatchOptions& o) {
  auto labels = LabelSelector::Parse(o.label_selector);
  if (!labels) return Reject(BadRequestError(labels.error().message()));
  auto fields = FieldSelector::Parse(o.field_selector);
  if (!fields) return Reject(BadRequestError(fields.error().message()));
  if (auto st = fields->Validate([&](std::string_view f) { return SupportsField(type, f); }); !st)
    return Reject(BadRequestError(st.error().message()));
  auto w = std::make_shared<Watcher>();
  w->key_ = type.StoreKey();
  w->ns_ = type.namespaced ? o.ns : "";
  w->labels_ = std::move(*labels);
  w->fields_ = std::move(*fields);
  std::lock_guard<std::mutex> lock(mu_);
  w->strategy_ = StrategyPtr(type);
  if (o.resource_version.empty() || o.resource_version == "0") {
    for (const auto& [k, obj] : data_[type.StoreKey()])
      if (Matches(*w, *obj)) w->queue_.push_back({"ADDED", obj});
  } else {
    auto n = ParseRv(o.resource_version);
    if (!n) return Reject(BadRequestError("invalid resource version: " + o.resource_version));
    if (*n > rv_) return Reject(TooLargeResourceVersionError(*n, rv_));
    if (*n < compacted_rv_)
      return Reject(ExpiredError("too old resource version: " + std::to_string(*n) + " (" +
                                 std::to_string(compacted_rv_ + 1) + ")"));
    for (const auto& ev : history_)
      if (ev.rv > *n) Deliver(*w, ev);
  }
  w->progress_ = rv_;
  watchers_.push_back(w);
  return w;
}

void Store::StopWatch(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), w), watchers_.end());
}

void Store::CloseAllWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : watchers_) {
    std::lock_guard<std::mutex> wl(w->mu_);
    w->closed_ = true;
    w->cv_.notify_all();
  }
  watchers_.clear();
}

void Store::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

void Store::RemoveTypesOf(const std::string& store_key) {
  for (auto it = types_.begin(); it != types_.end();) {
    if (it->second->custom && it->second->StoreKey() == store_key)
      it = types_.erase(it);
    else
      ++it;
  }
}

void Store::OnCrdChange(const Json* crd, const Json* old) {
  const Json* ref = crd ? crd : old;
  std::string skey =
      GetString(*ref, {"spec", "group"}) + "/" + GetString(*ref, {"spec", "names", "plural"});
  RemoveTypesOf(skey);
  if (!crd) {
    strategies_.erase(skey);
    data_.erase(skey);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      if ((*it)->key_ == skey) {
        std::lock_guard<std::mutex> wl((*it)->mu_);
        (*it)->closed_ = true;
        (*it)->cv_.notify_all();
        it = watchers_.erase(it);
      } else {
        ++it;
      }
    }
    return;
  }
  TypePtr storage;
  for (auto& t : TypesFromCrd(*crd)) {
    types_[TypeKey(t->group, t->version, t->resource)] = t;
    if (t->version == t->storage_version || !storage) storage = t;
  }
  if (storage) strategies_[skey] = MakeStrategy(storage, &services_);
}

}  // namespace pylon::apiserver

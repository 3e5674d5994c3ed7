// SPDX-License-Identifier: MIT
/*
 * ceph_omap.cc - the Ceph bridge's extended attributes and object maps:
 * values shared with librados on the way in, Ceph's own buffers (claimed
 * raws) on the way out, as object data.
 */
#include "config.h"

#include <cstring>
#include <utility>

#include "ceph_priv.h"

using namespace bl_ceph_priv;

namespace bl_ceph_priv {

// @n keys, none NULL (a NULL array only with @n 0).
bool keys_ok(const char *const *keys, size_t n) noexcept
{
	if (n && !keys)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!keys[i])
			return false;
	return true;
}

// The pairs as librados' map, the values sharing the lists' bytes (held
// by @hold); a key given twice keeps its last value.
int omap_map(const char *const *keys, const struct bl_list *const *vals,
	     size_t n, std::map<std::string, ::ceph::bufferlist> &m,
	     bl::ceph::list_ref &hold, bool for_op)
{
	if (!keys_ok(keys, n) || (n && !vals))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!vals[i])
			return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		::ceph::bufferlist bl;
		int e = for_op ? to_ceph_shared(vals[i], &bl, &hold)
			       : bl::ceph::to_ceph(vals[i], &bl, &hold);

		if (e < 0)
			return e;
		m[keys[i]] = std::move(bl);
	}
	return 0;
}

} // namespace bl_ceph_priv

extern "C" {

int bl_rados_setxattr(struct bl_rados *r, const char *oid, const char *name,
		      const struct bl_list *val)
{
	if (!r || !oid || !name)
		return -EINVAL;
	return with_ceph_list(val, [&](::ceph::bufferlist &bl) {
		return r->io.setxattr(oid, name, bl);
	});
}

ssize_t bl_rados_getxattr(struct bl_rados *r, const char *oid,
			  const char *name, struct bl_list *out)
{
	if (!r || !oid || !name || !out)
		return -EINVAL;
	try {
		::ceph::bufferlist bl;
		int e = r->io.getxattr(oid, name, bl);
		size_t n;

		if (e < 0)
			return e;
		n = bl.length();
		e = bl::ceph::from_ceph(std::move(bl), out);
		return e < 0 ? e : ssize_t(n);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int bl_rados_rmxattr(struct bl_rados *r, const char *oid, const char *name)
{
	if (!r || !oid || !name)
		return -EINVAL;
	try {
		return r->io.rmxattr(oid, name);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int bl_rados_getxattrs(struct bl_rados *r, const char *oid,
		       bl_rados_xattr_cb cb, void *arg)
{
	if (!r || !oid || !cb)
		return -EINVAL;
	try {
		std::map<std::string, ::ceph::bufferlist> attrs;
		int e = r->io.getxattrs(oid, attrs);

		if (e < 0)
			return e;
		for (auto &a : attrs) {
			tmp_list v;

			e = bl::ceph::from_ceph(std::move(a.second), &v.l);
			if (e < 0)
				return e;
			e = cb(a.first.c_str(), &v.l, arg);
			if (e)
				return e;
		}
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int bl_rados_omap_set(struct bl_rados *r, const char *oid,
		      const char *const *keys,
		      const struct bl_list *const *vals, size_t n)
{
	if (!r || !oid)
		return -EINVAL;
	return guarded([&] {
		std::map<std::string, ::ceph::bufferlist> m;
		bl::ceph::list_ref hold;
		int e = omap_map(keys, vals, n, m, hold, false);

		if (e < 0 || n == 0)
			return e;
		return r->io.omap_set(oid, m);
	});
}

int bl_rados_omap_get(struct bl_rados *r, const char *oid,
		      const char *const *keys, size_t n, bl_rados_omap_cb cb,
		      void *arg)
{
	if (!r || !oid || !cb || !keys_ok(keys, n))
		return -EINVAL;
	return guarded([&] {
		std::set<std::string> ks;
		std::map<std::string, ::ceph::bufferlist> vals;

		for (size_t i = 0; i < n; i++)
			ks.insert(keys[i]);
		int e = r->io.omap_get_vals_by_keys(oid, ks, &vals);
		return e < 0 ? e : deliver_omap(vals, cb, arg);
	});
}

int bl_rados_omap_get_range(struct bl_rados *r, const char *oid,
			    const char *start_after, const char *prefix,
			    uint64_t max, int *more, bl_rados_omap_cb cb,
			    void *arg)
{
	if (!r || !oid || !cb || max == 0)
		return -EINVAL;
	return guarded([&] {
		std::map<std::string, ::ceph::bufferlist> vals;
		bool m = false;
		int e = r->io.omap_get_vals2(oid, start_after ? start_after : "",
					     prefix ? prefix : "", max, &vals,
					     &m);
		if (e < 0)
			return e;
		if (more)
			*more = m;
		return deliver_omap(vals, cb, arg);
	});
}

int bl_rados_omap_rm_keys(struct bl_rados *r, const char *oid,
			  const char *const *keys, size_t n)
{
	if (!r || !oid || !keys_ok(keys, n))
		return -EINVAL;
	if (n == 0)
		return 0;
	return guarded([&] {
		std::set<std::string> ks;

		for (size_t i = 0; i < n; i++)
			ks.insert(keys[i]);
		return r->io.omap_rm_keys(oid, ks);
	});
}

int bl_rados_omap_clear(struct bl_rados *r, const char *oid)
{
	if (!r || !oid)
		return -EINVAL;
	return guarded([&] { return r->io.omap_clear(oid); });
}

} // extern "C"

/* SPDX-License-Identifier: MIT */
/*
 * test_version.c - the version macros that <bufferlist/common.h> brings
 * (from the generated <bufferlist/version.h>) agree with the package
 * version configure was given (PACKAGE_VERSION, from AC_INIT).
 */
#include <bufferlist/common.h>	/* first: it alone must define BL_VERSION_* */

#if !defined(BL_VERSION_MAJOR) || !defined(BL_VERSION_MINOR) || \
	!defined(BL_VERSION_PATCH) || !defined(BL_VERSION_STRING)
#error "<bufferlist/common.h> does not define the BL_VERSION_* macros"
#endif
/* users compare versions in #if: the numbers must be preprocessor integers */
#if BL_VERSION_MAJOR < 0 || BL_VERSION_MINOR < 0 || BL_VERSION_PATCH < 0
#error "BL_VERSION_* are not non-negative integers"
#endif

#include <stdio.h>
#include <string.h>
#include "testutil.h"	/* config.h: PACKAGE_VERSION */

START_TEST(version_string_is_package_version)
{
	ck_assert_str_eq(BL_VERSION_STRING, PACKAGE_VERSION);
}
END_TEST

START_TEST(version_numbers_spell_package_version)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%d.%d.%d", BL_VERSION_MAJOR,
			 BL_VERSION_MINOR, BL_VERSION_PATCH);

	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, (int)sizeof(buf));
	ck_assert_str_eq(buf, PACKAGE_VERSION);
}
END_TEST

int main(void)
{
	const TTest *macros_tests[] = {
		version_string_is_package_version,
		version_numbers_spell_package_version,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("macros", macros_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("version", groups));
}

/* A fixture of the abi_exports_selftest_missing test: the public header
 * plus one function no library defines, so that check_exports.sh must fail
 * naming it (the check can tell a declared function that is not exported). */
#include "redlock.h"

int redlock_selftest_not_exported(void);

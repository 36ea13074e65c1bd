/* A fixture of the abi_exports_selftest_undeclared test: linked into a copy
 * of the library with its version script, which exports every redlock_*
 * name, it adds one function include/redlock.h does not declare, so that
 * check_exports.sh must fail naming it (the check can tell an exported
 * function that is not declared). */
int redlock_selftest_not_declared(void);

/* Returns 0; exists only to be exported. */
int redlock_selftest_not_declared(void) {
    return 0;
}

/* Shim of riscv's <asm/asm.h> (6.1/6.12, rv64, tests only). */
#ifndef COPYGEN_SHIM_RISCV_ASM_H
#define COPYGEN_SHIM_RISCV_ASM_H
#define SZREG 8
#define REG_L ld
#define REG_S sd
#endif

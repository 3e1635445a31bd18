/* Shim of riscv's <asm/csr.h> (6.1/6.12, S-mode kernel, tests only). */
#ifndef COPYGEN_SHIM_RISCV_CSR_H
#define COPYGEN_SHIM_RISCV_CSR_H
#define SR_SUM 0x00040000
#define CSR_STATUS sstatus
#endif

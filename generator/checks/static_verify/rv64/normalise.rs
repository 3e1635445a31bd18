//! raki's decoding of one RV64 instruction in the checker's normalised
//! form: compressed instructions as their base ones, loads and stores by
//! width, register and immediate operations by what they compute.

use raki::{BaseIOpcode, COpcode, OpcodeKind, PrivOpcode, ZicsrOpcode};

/// One instruction, normalised (compressed forms as their base ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::checks::static_verify) enum Op {
    /// Zero-extending (or, `signed`, sign-extending) load of `width` bytes.
    Load {
        width: usize,
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    Store {
        width: usize,
        rs1: u8,
        rs2: u8,
        imm: i64,
    },
    /// `rd = rs1 op imm`
    Imm {
        op: Alu,
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    /// `rd = rs1 op rs2`
    Reg {
        op: Alu,
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    /// `lui rd, imm` with the shifted, sign-extended value.
    Lui {
        rd: u8,
        value: i64,
    },
    Branch {
        cc: Br,
        rs1: u8,
        rs2: u8,
        off: i64,
    },
    Jal {
        rd: u8,
        off: i64,
    },
    Jalr {
        rd: u8,
        rs1: u8,
        imm: i64,
    },
    /// Writes `rd` with something the analysis does not model (a CSR
    /// read, `auipc`, a multiply).
    Opaque {
        rd: u8,
        inputs: [u8; 2],
    },
    Trap {
        syscall: bool,
    },
    Nop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::checks::static_verify) enum Alu {
    Add,
    /// `addw`/`addiw`: the 32-bit sum, sign-extended.
    AddW,
    Sub,
    And,
    Or,
    Xor,
    Sll,
    Srl,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::checks::static_verify) enum Br {
    Eq,
    Ne,
    Ltu,
    Geu,
    Lt,
    Ge,
}

/// raki's decoding in the normalised form.
pub(super) fn normalise(i: &raki::Instruction) -> Op {
    let rd = i.rd.unwrap_or(0) as u8;
    let rs1 = i.rs1.unwrap_or(0) as u8;
    let rs2 = i.rs2.unwrap_or(0) as u8;
    let imm = i.imm.unwrap_or(0) as i64;
    use Alu::*;
    let imm_op = |op| Op::Imm { op, rd, rs1, imm };
    let reg_op = |op| Op::Reg { op, rd, rs1, rs2 };
    match &i.opc {
        OpcodeKind::BaseI(b) => {
            use BaseIOpcode::*;
            let load = |width| Op::Load {
                width,
                rd,
                rs1,
                imm,
            };
            let store = |width| Op::Store {
                width,
                rs1,
                rs2,
                imm,
            };
            let branch = |cc| Op::Branch {
                cc,
                rs1,
                rs2,
                off: imm,
            };
            match *b {
                LB | LBU => load(1),
                LH | LHU => load(2),
                LW | LWU => load(4),
                LD => load(8),
                SB => store(1),
                SH => store(2),
                SW => store(4),
                SD => store(8),
                ADDI => imm_op(Add),
                ADDIW => imm_op(AddW),
                ANDI => imm_op(And),
                ORI => imm_op(Or),
                XORI => imm_op(Xor),
                SLLI => imm_op(Sll),
                SRLI => imm_op(Srl),
                SLTI | SLTIU | SRAI | SLLIW | SRLIW | SRAIW => imm_op(Other),
                ADD => reg_op(Add),
                ADDW => reg_op(AddW),
                SUB => reg_op(Sub),
                AND => reg_op(And),
                OR => reg_op(Or),
                XOR => reg_op(Xor),
                SLL => reg_op(Sll),
                SRL => reg_op(Srl),
                SLT | SLTU | SRA | SUBW | SLLW | SRLW | SRAW => reg_op(Other),
                LUI => Op::Lui {
                    rd,
                    value: ((imm as u32) << 12) as i32 as i64,
                },
                AUIPC => Op::Opaque { rd, inputs: [0, 0] },
                BEQ => branch(Br::Eq),
                BNE => branch(Br::Ne),
                BLTU => branch(Br::Ltu),
                BGEU => branch(Br::Geu),
                BLT => branch(Br::Lt),
                BGE => branch(Br::Ge),
                JAL => Op::Jal { rd, off: imm },
                JALR => Op::Jalr { rd, rs1, imm },
                ECALL => Op::Trap { syscall: true },
                EBREAK => Op::Trap { syscall: false },
            }
        }
        OpcodeKind::C(c) => {
            use COpcode::*;
            match *c {
                LW => Op::Load {
                    width: 4,
                    rd,
                    rs1,
                    imm,
                },
                LD => Op::Load {
                    width: 8,
                    rd,
                    rs1,
                    imm,
                },
                LWSP => Op::Load {
                    width: 4,
                    rd,
                    rs1: 2,
                    imm,
                },
                LDSP => Op::Load {
                    width: 8,
                    rd,
                    rs1: 2,
                    imm,
                },
                SW => Op::Store {
                    width: 4,
                    rs1,
                    rs2,
                    imm,
                },
                SD => Op::Store {
                    width: 8,
                    rs1,
                    rs2,
                    imm,
                },
                SWSP => Op::Store {
                    width: 4,
                    rs1: 2,
                    rs2,
                    imm,
                },
                SDSP => Op::Store {
                    width: 8,
                    rs1: 2,
                    rs2,
                    imm,
                },
                NOP => Op::Nop,
                ADDI => Op::Imm {
                    op: Add,
                    rd,
                    rs1: rd,
                    imm,
                },
                ADDIW => Op::Imm {
                    op: AddW,
                    rd,
                    rs1: rd,
                    imm,
                },
                ADDI16SP => Op::Imm {
                    op: Add,
                    rd: 2,
                    rs1: 2,
                    imm,
                },
                ADDI4SPN => Op::Imm {
                    op: Add,
                    rd,
                    rs1: 2,
                    imm,
                },
                LI => Op::Imm {
                    op: Add,
                    rd,
                    rs1: 0,
                    imm,
                },
                LUI => Op::Lui { rd, value: imm },
                SRLI => Op::Imm {
                    op: Srl,
                    rd,
                    rs1: rd,
                    imm,
                },
                SLLI => Op::Imm {
                    op: Sll,
                    rd,
                    rs1: rd,
                    imm,
                },
                SRAI => Op::Imm {
                    op: Other,
                    rd,
                    rs1: rd,
                    imm,
                },
                ANDI => Op::Imm {
                    op: And,
                    rd,
                    rs1: rd,
                    imm,
                },
                SUB => Op::Reg {
                    op: Sub,
                    rd,
                    rs1: rd,
                    rs2,
                },
                XOR => Op::Reg {
                    op: Xor,
                    rd,
                    rs1: rd,
                    rs2,
                },
                OR => Op::Reg {
                    op: Or,
                    rd,
                    rs1: rd,
                    rs2,
                },
                AND => Op::Reg {
                    op: And,
                    rd,
                    rs1: rd,
                    rs2,
                },
                ADD => Op::Reg {
                    op: Add,
                    rd,
                    rs1: rd,
                    rs2,
                },
                ADDW => Op::Reg {
                    op: AddW,
                    rd,
                    rs1: rd,
                    rs2,
                },
                SUBW => Op::Reg {
                    op: Other,
                    rd,
                    rs1: rd,
                    rs2,
                },
                MV => Op::Reg {
                    op: Add,
                    rd,
                    rs1: 0,
                    rs2,
                },
                J => Op::Jal { rd: 0, off: imm },
                JAL => Op::Jal { rd: 1, off: imm },
                JR => Op::Jalr { rd: 0, rs1, imm: 0 },
                JALR => Op::Jalr { rd: 1, rs1, imm: 0 },
                BEQZ => Op::Branch {
                    cc: Br::Eq,
                    rs1,
                    rs2: 0,
                    off: imm,
                },
                BNEZ => Op::Branch {
                    cc: Br::Ne,
                    rs1,
                    rs2: 0,
                    off: imm,
                },
                EBREAK => Op::Trap { syscall: false },
            }
        }
        OpcodeKind::Zicsr(z) => match z {
            ZicsrOpcode::CSRRW | ZicsrOpcode::CSRRS | ZicsrOpcode::CSRRC => {
                Op::Opaque { rd, inputs: [0, 0] }
            }
            _ => Op::Opaque { rd, inputs: [0, 0] },
        },
        OpcodeKind::M(_) => Op::Opaque {
            rd,
            inputs: [rs1, rs2],
        },
        OpcodeKind::Priv(PrivOpcode::WFI) | OpcodeKind::Priv(PrivOpcode::SFENCE_VMA) => {
            Op::Trap { syscall: true }
        }
        OpcodeKind::Priv(_) => Op::Trap { syscall: true },
        // Atomics, fences, cache-block and counter instructions: a write of
        // rd the analysis does not model.
        _ => Op::Opaque {
            rd,
            inputs: [rs1, rs2],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raki::Decode;

    #[test]
    fn compressed_and_full_forms_normalise_alike() {
        // c.li a5, 3 and addi a5, zero, 3
        let c = 0x478du16.decode(raki::Isa::Rv64).unwrap();
        let f = 0x00300793u32.decode(raki::Isa::Rv64).unwrap();
        assert_eq!(normalise(&c), normalise(&f));
        // ecall is a system call.
        let e = 0x00000073u32.decode(raki::Isa::Rv64).unwrap();
        assert_eq!(normalise(&e), Op::Trap { syscall: true });
    }
}

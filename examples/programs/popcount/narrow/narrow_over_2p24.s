	.section	.rodata
	.align 8
.Lc_count_bits_m1:
	.quad	6148914691236517205
.Lc_count_bits_m2:
	.quad	3689348814741910323
.Lc_count_bits_m4:
	.quad	1085102592571150095
.Lc_count_bits_h01:
	.quad	72340172838076673
	.text
	.p2align 4
	.globl	count_bits
	.type	count_bits, @function
count_bits:
	.cfi_startproc
	xorl	%eax, %eax
	cmpl	$16777216, %esi
	setg	%al
	testl	%esi, %esi
	jle	.Lc_count_bits_3
	movslq	%esi, %rsi
	leaq	(%rdi,%rsi,8), %rsi
	.p2align 4,,10
	.p2align 3
.Lc_count_bits_1:
	movq	(%rdi), %rdx
	movq	%rdx, %rcx
	shrq	%rcx
	andq	.Lc_count_bits_m1(%rip), %rcx
	subq	%rcx, %rdx
	movq	%rdx, %rcx
	shrq	$2, %rdx
	andq	.Lc_count_bits_m2(%rip), %rcx
	andq	.Lc_count_bits_m2(%rip), %rdx
	addq	%rcx, %rdx
	movq	%rdx, %rcx
	shrq	$4, %rcx
	addq	%rcx, %rdx
	andq	.Lc_count_bits_m4(%rip), %rdx
	imulq	.Lc_count_bits_h01(%rip), %rdx
	shrq	$56, %rdx
	addq	%rdx, %rax
	addq	$8, %rdi
	cmpq	%rdi, %rsi
	jne	.Lc_count_bits_1
.Lc_count_bits_3:
	ret
	.cfi_endproc
	.size	count_bits, .-count_bits

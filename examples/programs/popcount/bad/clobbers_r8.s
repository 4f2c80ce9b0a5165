	.text
	.p2align 4
	.globl	count_bits
	.type	count_bits, @function
count_bits:
	.cfi_startproc
	xorl	%eax, %eax
	testl	%esi, %esi
	jle	.Lc_count_bits_3
	movslq	%esi, %rsi
	leaq	(%rdi,%rsi,8), %rsi
	movabsq	$6148914691236517205, %r8
	movabsq	$3689348814741910323, %r9
	movabsq	$1085102592571150095, %r10
	movabsq	$72340172838076673, %r11
	.p2align 4,,10
	.p2align 3
.Lc_count_bits_1:
	movq	(%rdi), %rdx
	movq	%rdx, %rcx
	shrq	%rcx
	andq	%r8, %rcx
	subq	%rcx, %rdx
	movq	%rdx, %rcx
	shrq	$2, %rdx
	andq	%r9, %rcx
	andq	%r9, %rdx
	addq	%rcx, %rdx
	movq	%rdx, %rcx
	shrq	$4, %rcx
	addq	%rcx, %rdx
	andq	%r10, %rdx
	imulq	%r11, %rdx
	shrq	$56, %rdx
	addq	%rdx, %rax
	addq	$8, %rdi
	cmpq	%rdi, %rsi
	jne	.Lc_count_bits_1
.Lc_count_bits_3:
	ret
	.cfi_endproc
	.size	count_bits, .-count_bits

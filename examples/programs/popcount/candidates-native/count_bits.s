	.text
	.p2align 4
	.globl	count_bits
	.type	count_bits, @function
count_bits:
	.cfi_startproc
	xorl	%eax, %eax
	testl	%esi, %esi
	jle	.Lc_count_bits_n3
	movslq	%esi, %rsi
	xorl	%edx, %edx
	testb	$1, %sil
	je	.Lc_count_bits_n0
	popcntq	(%rdi), %rax
	addq	$8, %rdi
	subq	$1, %rsi
	je	.Lc_count_bits_n3
.Lc_count_bits_n0:
	leaq	(%rdi,%rsi,8), %rsi
	.p2align 4,,10
	.p2align 3
.Lc_count_bits_n1:
	popcntq	(%rdi), %rcx
	addq	%rcx, %rax
	popcntq	8(%rdi), %rcx
	addq	%rcx, %rdx
	addq	$16, %rdi
	cmpq	%rdi, %rsi
	jne	.Lc_count_bits_n1
	addq	%rdx, %rax
.Lc_count_bits_n3:
	ret
	.cfi_endproc
	.size	count_bits, .-count_bits

	.text
	.p2align 4
	.globl	count_palindromes
	.type	count_palindromes, @function
count_palindromes:
	.cfi_startproc
	xorl	%eax, %eax
	testl	%esi, %esi
	jle	.Lc_count_palindromes_9
	movslq	%esi, %rsi
	leaq	-1(%rsi,%rsi), %r8
	xorl	%ecx, %ecx
.Lc_count_palindromes_1:
	movq	%rcx, %rdx
	shrq	%rdx
	movq	%rcx, %r9
	andl	$1, %r9d
	addq	%rdx, %r9
	cmpq	%rsi, %r9
	jge	.Lc_count_palindromes_3
.Lc_count_palindromes_2:
	movzbl	(%rdi,%rdx), %r10d
	cmpb	%r10b, (%rdi,%r9)
	jne	.Lc_count_palindromes_3
	addq	$1, %rax
	subq	$1, %rdx
	js	.Lc_count_palindromes_3
	addq	$1, %r9
	cmpq	%rsi, %r9
	jl	.Lc_count_palindromes_2
.Lc_count_palindromes_3:
	addq	$1, %rcx
	cmpq	%r8, %rcx
	jl	.Lc_count_palindromes_1
.Lc_count_palindromes_9:
	ret
	.cfi_endproc
	.size	count_palindromes, .-count_palindromes

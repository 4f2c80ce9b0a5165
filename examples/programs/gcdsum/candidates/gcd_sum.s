	.text
	.p2align 4
	.globl	gcd_sum
	.type	gcd_sum, @function
gcd_sum:
	.cfi_startproc
	xorl	%eax, %eax
	testl	%edi, %edi
	je	.Lc_gcd_sum_9
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset 3, -16
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset 6, -24
	xorl	%r9d, %r9d
	movl	$1, %r8d
	.p2align 4,,10
	.p2align 3
.Lc_gcd_sum_1:
	movl	$1, %esi
	.p2align 4,,10
	.p2align 3
.Lc_gcd_sum_2:
	movl	%r8d, %eax
	movl	%esi, %edx
	movl	%eax, %ebx
	orl	%edx, %ebx
	bsfl	%ebx, %ebx
	bsfl	%eax, %ecx
	shrl	%cl, %eax
	.p2align 4,,10
	.p2align 3
.Lc_gcd_sum_3:
	bsfl	%edx, %ecx
	shrl	%cl, %edx
	movl	%edx, %ebp
	subl	%eax, %ebp
	movl	%eax, %ecx
	subl	%edx, %ecx
	cmova	%edx, %eax
	cmova	%ecx, %ebp
	movl	%ebp, %edx
	jne	.Lc_gcd_sum_3
	movl	%ebx, %ecx
	shll	%cl, %eax
	addq	%rax, %r9
	addl	$1, %esi
	cmpl	%esi, %edi
	jnb	.Lc_gcd_sum_2
	addl	$1, %r8d
	cmpl	%r8d, %edi
	jnb	.Lc_gcd_sum_1
	movq	%r9, %rax
	popq	%rbp
	.cfi_def_cfa_offset 16
	popq	%rbx
	.cfi_def_cfa_offset 8
.Lc_gcd_sum_9:
	ret
	.cfi_endproc
	.size	gcd_sum, .-gcd_sum
